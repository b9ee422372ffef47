"""The GPU path of hostbw, run on the CPU: torch's cuda namespace is faked, the copies are real CPU tensor copies.

This checks the data layout the H200 produces (pinned, pageable, bidirectional, NUMA pinning, PCIe link,
failures per copy and per device) against the schema; the bandwidths themselves mean nothing here.
"""
import contextlib
import dataclasses
import json
import os
import sys
import time
import types

import pytest
import torch as real_torch

import hostbw
from probe_packages.hostbw import device_run, together_phase
from probe_packages.hostbw.numa import format_cpulist
from probelib.measure.together_worker import load_task
from fake_cuda_event import FakeEvent  # noqa: E402
from ansible_collections.gpufleet.validation.plugins.plugin_utils.store.schemas import schema_validator  # noqa: E402
from probelib.params import probe_defaults

GIB = 2 ** 30


class FakeStream:
    def wait_event(self, event):
        pass


class FakeCuda:
    def __init__(self, count, broken_index=None):
        self.count = count
        self.broken_index = broken_index
        self.Event = FakeEvent
        self.Stream = FakeStream

    def is_available(self):
        return True

    def device_count(self):
        return self.count

    def get_device_properties(self, index):
        return types.SimpleNamespace(name="NVIDIA H200", uuid="0000-%d" % index, total_memory=141 * GIB, major=9, minor=0,
                                     pci_domain_id=0, pci_bus_id=0x18 + index, pci_device_id=0)

    def mem_get_info(self, index):
        if index == self.broken_index:
            raise RuntimeError("CUDA error: unspecified launch failure")
        return 100 * GIB, 141 * GIB

    def device(self, index):
        return contextlib.nullcontext()

    def stream(self, stream):
        return contextlib.nullcontext()

    def current_stream(self):
        return FakeStream()

    def synchronize(self, index=None):
        pass

    def empty_cache(self):
        pass


class FakeTorch:
    """Real CPU torch, except that cuda exists and device/pinned tensors are plain host tensors."""

    def __init__(self, count=2, broken_index=None, refuse_pinning=False):
        self.cuda = FakeCuda(count, broken_index)
        self.version = types.SimpleNamespace(cuda="13.0")
        self.__version__ = "2.11.0+fake"
        self.accelerator = types.SimpleNamespace(empty_host_cache=self._emptied)
        self.emptied = 0
        self.refuse_pinning = refuse_pinning

    def _emptied(self):
        self.emptied += 1

    def __getattr__(self, name):
        return getattr(real_torch, name)

    def device(self, name):
        return real_torch.device("cpu")

    def empty(self, numel, pin_memory=False, device=None):
        if pin_memory and self.refuse_pinning:
            raise RuntimeError("CUDA error: out of memory (cudaHostAlloc)")
        return real_torch.empty(numel)

    def rand(self, numel, device=None):
        return real_torch.rand(numel)


class FakeReader:
    def attempt(self, function, handle, *args):
        if function == "nvmlDeviceGetPciInfo":
            return True, types.SimpleNamespace(busId=b"00000000:18:00.0")
        return False, "not faked"

    def value(self, function, handle, *args, **kwargs):
        return {"nvmlDeviceGetMaxPcieLinkGeneration": 5, "nvmlDeviceGetMaxPcieLinkWidth": 16,
                "nvmlDeviceGetCurrPcieLinkGeneration": 5, "nvmlDeviceGetCurrPcieLinkWidth": 16}[function]


class FakeSnapshots:
    """NVML knows GPU 0 only, so GPU 1 takes its bus id from torch and has no PCIe link information."""

    def __init__(self):
        self.session = types.SimpleNamespace(usable=True, reason="", reader=FakeReader())
        self.by_uuid = {"GPU-0000-0": "handle-0"}
        self.closed = False

    def take(self, uuid):
        if uuid not in self.by_uuid:
            return {"unavailable": "no NVML device has the UUID %r that torch reported" % uuid}
        return {"time_unix_s": time.time(), "sm_clock_mhz": 1980, "memory_clock_mhz": 3201, "power_draw_w": 118.5,
                "temperature_c": 31, "other_processes": [],
                "clock_event_reasons": {"mask": 1, "mask_hex": "0x%016x" % 1, "names": ["gpu_idle"], "slowdown_active": False,
                                        "method": "nvmlDeviceGetCurrentClocksEventReasons"}}

    def close(self):
        self.closed = True


def _validator():
    return schema_validator("hostbw.schema.json")


def in_process_together(task, args, workers, deadline_s, devices=None):
    """run_together's record, each worker's task called here one after another (the fake torch lives in this process
    only): the GPU path of the worker's code and the record's layout, not concurrency (test_together_copies_run)."""
    function, by_index, records = load_task(task), {device["index"]: device for device in devices}, []
    for worker in workers:
        record = dict(dataclasses.asdict(worker), start_lag_ms=0.1, duration_s=0.01)
        try:
            record.update(status="ok", result=function(by_index[worker.device_index], dataclasses.asdict(worker),
                                                       json.loads(json.dumps(args)), lambda: 0.1))
        except Exception as exc:  # as the worker process records it
            record.update(status="error", error="%s: %s" % (type(exc).__name__, exc))
        records.append(record)
    return {"method": "in process (test)", "task": task, "workers": records, "released_together": True,
            "start_spread_ms": 0.0, "wall_s": 0.1}


def _run(monkeypatch, fake, **params):
    snapshots = FakeSnapshots()
    allowed = sorted(os.sched_getaffinity(0))
    localities = {"0000:18:00.0": {"numa_node": 0, "local_cpulist": format_cpulist(allowed[:1])},
                  "0000:19:00.0": {"numa_node": -1, "local_cpulist": format_cpulist(allowed)}}
    monkeypatch.setitem(sys.modules, "torch", fake)
    monkeypatch.setattr(hostbw, "_open_snapshots", lambda: snapshots)
    monkeypatch.setattr(device_run, "read_locality", lambda bus_id: localities[bus_id])
    monkeypatch.setattr(together_phase, "read_locality", lambda bus_id: localities[bus_id])
    monkeypatch.setattr(together_phase, "run_together", in_process_together)
    merged = dict(probe_defaults("hostbw"), buffer_mib=4, iterations=3, repeats=3, warmup=1, check_elements=64)
    merged.update(params)
    result = hostbw.collect(merged)
    assert snapshots.closed
    assert os.sched_getaffinity(0) == set(allowed)
    _validator().validate(json.loads(json.dumps(result.data)))
    return result


def test_full_plan_on_two_gpus(monkeypatch):
    fake = FakeTorch(count=2)
    result = _run(monkeypatch, fake, alone_devices="all")
    assert result.status == "ok" and result.reason == "" and result.data["errors"] == []
    assert result.environment == {"torch_version": "2.11.0+fake", "torch_cuda_version": "13.0"}
    assert result.data["plan"]["name"] == "gpu_full"
    first, second = result.data["devices"]
    assert (first["kind"], first["index"], first["uuid"]) == ("cuda", 0, "GPU-0000-0")
    kinds = [(entry["direction"], entry["host_memory"]) for entry in first["results"]]
    assert kinds == [("h2d", "pinned"), ("d2h", "pinned"), ("bidirectional", "pinned"), ("h2d", "pageable"), ("d2h", "pageable")]
    for entry in first["results"]:
        assert entry["median_gbps"] > 0 and entry["data_check"]["ok"] and len(entry["repeats_gbps"]) == 3
        assert entry["bytes_per_copy"] == 4 * 2 ** 20
    bidirectional = first["results"][2]
    assert bidirectional["h2d_gbps"] > 0 and bidirectional["d2h_gbps"] > 0
    assert bidirectional["data_check"]["checked_elements"] == 128
    assert first["locality"]["pci_bus_id"] == "0000:18:00.0" and first["locality"]["pci_bus_id_source"] == "nvml"
    assert first["locality"]["pinned"] and first["locality"]["cpus_used"] == sorted(os.sched_getaffinity(0))[:1]
    assert first["locality"]["pinned_cache_emptied"] is True
    assert first["pcie"]["link_raw_gbps"] == 63.015
    assert first["pcie"]["after_pinned_copies"] == {"link_gen": 5, "link_width": 16}
    assert isinstance(first["results"][0]["pct_of_link_raw"], float)
    assert first["gpu_state_before"]["sm_clock_mhz"] == 1980
    # GPU 1: NVML does not know it, torch gives the bus id; sysfs says -1, so it is not pinned and says why
    assert second["locality"]["pci_bus_id"] == "0000:19:00.0" and second["locality"]["pci_bus_id_source"] == "torch"
    assert not second["locality"]["pinned"] and "VM?" in second["locality"]["note"]
    assert "unavailable" in second["pcie"] and "unavailable" in second["results"][0]["pct_of_link_raw"]
    assert fake.emptied >= 4
    # the together phase's GPU path: a worker per GPU, pinned H2D and D2H, its device and place named
    workers = result.data["together"]["workers"]
    assert [(worker["device_index"], worker["status"]) for worker in workers] == [(0, "ok"), (1, "ok")]
    for worker in workers:
        together = worker["result"]
        assert together["h2d_pinned_gbps"] > 0 and together["d2h_pinned_gbps"] > 0 and together["size_mib"] == 4
        assert together["h2d"]["data_check"]["ok"] and together["d2h"]["data_check"]["ok"]
        assert together["device"]["uuid"] == "GPU-0000-%d" % worker["device_index"]
        assert together["uplink_sharers"] == 1 and together["uplink_gpus"] == [worker["device_index"]]
    assert workers[0]["result"]["numa"]["pinned"] and workers[0]["result"]["place"]["pci_bus_id"] == "0000:18:00.0"
    assert not workers[1]["result"]["numa"]["pinned"] and "VM?" in workers[1]["result"]["numa"]["note"]
    assert result.data["together"]["alone_reference"]["h2d_pinned_gbps"] == first["results"][0]["median_gbps"]


def test_by_default_only_the_first_gpu_runs_alone(monkeypatch):
    result = _run(monkeypatch, FakeTorch(count=2))
    assert result.status == "ok", result.reason
    assert [entry["index"] for entry in result.data["devices"]] == [0]
    assert [worker["device_index"] for worker in result.data["together"]["workers"]] == [0, 1]


def test_quick_plan_is_pinned_only(monkeypatch):
    result = _run(monkeypatch, FakeTorch(count=1), quick=True)
    assert result.data["plan"]["name"] == "gpu_quick" and result.data["plan"]["buffer_mib_requested"] == 256
    device = result.data["devices"][0]
    assert [(entry["direction"], entry["host_memory"]) for entry in device["results"]] == [("h2d", "pinned"), ("d2h", "pinned")]
    assert device["buffer"]["used_mib"] == 256


def test_refused_pinning_fails_those_copies_only(monkeypatch):
    result = _run(monkeypatch, FakeTorch(count=1, refuse_pinning=True))
    assert result.status == "partial"
    device = result.data["devices"][0]
    failed = [entry for entry in device["results"] if "error" in entry]
    measured = [entry for entry in device["results"] if "median_gbps" in entry]
    assert [(entry["direction"], entry["host_memory"]) for entry in failed] == [("h2d", "pinned"), ("d2h", "pinned")]
    assert [entry["host_memory"] for entry in measured] == ["pageable", "pageable"]
    assert "cudaHostAlloc" in result.reason and len(result.data["errors"]) == 2
    assert device["pcie"]["after_pinned_copies"] == {"unavailable": "no pinned copy ran"}


def test_one_broken_gpu_does_not_stop_the_others(monkeypatch):
    result = _run(monkeypatch, FakeTorch(count=2, broken_index=0), alone_devices="all")
    assert result.status == "partial"
    broken, healthy = result.data["devices"]
    assert "unspecified launch failure" in broken["error"] and "results" not in broken
    assert all(entry["median_gbps"] > 0 for entry in healthy["results"])
    assert result.data["errors"][0]["device"] == "cuda:0" and result.data["errors"][0]["what"] == "device"
    broken_worker, healthy_worker = result.data["together"]["workers"]
    assert "unspecified launch failure" in broken_worker["error"] and healthy_worker["status"] == "ok"
    assert result.data["errors"][-1] == {"device": "cuda:0", "what": "together",
                                         "error": "together worker 0: " + broken_worker["error"]}


def test_the_first_gpu_broken_alone_leaves_a_partial_result_where_the_others_measured_together(monkeypatch):
    result = _run(monkeypatch, FakeTorch(count=2, broken_index=0))
    assert result.status == "partial" and result.reason.startswith("failed: cuda:0 device (RuntimeError: CUDA error")
    assert result.data["together"]["alone_reference"] == {
        "unavailable": "no alone reference: the alone phase measured nothing: RuntimeError: CUDA error: unspecified launch failure"}


def test_every_device_failing_is_an_error(monkeypatch):
    result = _run(monkeypatch, FakeTorch(count=1, broken_index=0))
    assert result.status == "error" and "cuda:0 device" in result.reason


def test_data_check_failure_is_an_error():
    errors = device_run.errors_of("cuda:3", [
        {"direction": "h2d", "host_memory": "pinned", "median_gbps": 55.0,
         "data_check": {"checked_elements": 4096, "mismatched_elements": 3, "ok": False}},
        {"direction": "d2h", "host_memory": "pinned", "median_gbps": 55.0,
         "data_check": {"checked_elements": 4096, "mismatched_elements": 0, "ok": True}}])
    assert errors == [{"device": "cuda:3", "what": "h2d pinned", "error": "data check failed: 3 of 4096 sampled elements differ"}]


@pytest.mark.parametrize("device", ["cuda"])
def test_no_gpu_when_cuda_is_demanded_is_unavailable(monkeypatch, device):
    monkeypatch.setitem(sys.modules, "torch", real_torch)
    if real_torch.cuda.is_available():
        pytest.skip("this machine has a GPU")
    result = hostbw.collect(dict(probe_defaults("hostbw"), device=device))
    assert result.status == "unavailable" and "no CUDA GPU" in result.reason
    _validator().validate(result.data)
