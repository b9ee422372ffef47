"""Runs the membw probe for real on this machine (the CPU path) and checks its data against the schema;
then drives one device's run in-process to cover the GPU-shaped fields, a failing size and a failing device."""
import os
import subprocess
import sys
import time
from functools import partial

import pytest

from ansible_collections.gpufleet.validation.plugins.plugin_utils.store.schemas import schema_validator
import membw
from probe_runs import assert_foreign_processes_recorded, assert_schema_header, probe_path, run_probe, shadow_module
from probe_packages.membw import device_run
from probe_packages.membw.device_run import DeviceRun
from probe_packages.membw.plan import MIB, resolve_plan
from probelib import device_outcome
from probelib.measure.host_gpus import nothing_to_measure
from probelib.params import probe_defaults

torch = pytest.importorskip("torch")

CPU = {"kind": "cpu", "index": 0, "torch_device": "cpu", "name": "test CPU", "uuid": {"unavailable": "a CPU has no UUID"},
       "memory_total_mib": 1024, "compute_capability": {"unavailable": "not a GPU"}}
SNAPSHOT = {
    "time_unix_s": 1.0, "sm_clock_mhz": 1980, "memory_clock_mhz": 3201, "power_draw_w": 512.5, "temperature_c": 48,
    "clock_event_reasons": {"mask": 4, "mask_hex": "0x0000000000000004", "names": ["sw_power_cap"],
                            "slowdown_active": False, "method": "nvmlDeviceGetCurrentClocksEventReasons"},
    "other_processes": [{"pid": 4242, "name": "python3", "used_memory_mib": 1024.0}],
}


_validator = partial(schema_validator, "membw.schema.json")


def _run(tmp_path, params=None):
    """The envelope and the seconds the run took."""
    started = time.monotonic()
    envelope = run_probe(tmp_path, "membw", params, timeout=120, python=sys.executable)
    return envelope, time.monotonic() - started


def test_schema_header():
    assert_schema_header("membw")


def test_help_works_without_running():
    completed = subprocess.run([sys.executable, probe_path("membw"), "--help"], stdout=subprocess.PIPE, timeout=60, check=True)
    assert b"plateau" in completed.stdout


def test_probe_runs_here_and_matches_schema(tmp_path):
    envelope, elapsed = _run(tmp_path)
    assert elapsed < 60  # about 5 s on the idle 2-core controller; slack for other test runs sharing it
    assert envelope["probe"] == "membw" and envelope["status"] == "ok", envelope["reason"]
    data = envelope["data"]
    _validator().validate(data)
    assert_foreign_processes_recorded(data)
    assert data["method"]["bytes_counted"] == "read + written (2 x buffer size per copy)"
    assert data["plan"]["name"] == "cpu-default" and data["plan"]["quick"] is False
    assert data["errors"] == []
    (entry,) = data["devices"]
    assert entry["device"]["kind"] == "cpu" and entry["status"] == "ok"
    measured = [point for point in entry["sweep"] if point["status"] == "measured"]
    assert [point["size_mib"] for point in entry["sweep"]] == data["plan"]["sizes_mib"]
    for point in measured:
        assert point["bandwidth_gbps"] > 0 and point["copy_verified"] is True and point["iterations"] >= 2
        # the formula as stated: 2 x bytes / time / 1e9
        assert point["bandwidth_gbps"] == pytest.approx(2 * point["buffer_bytes"] / point["time_per_copy_s"] / 1e9, rel=1e-3)
    plateau = entry["plateau"]
    sizes = [point["size_mib"] for point in measured]
    assert set(plateau["sizes_mib"]) <= set(sizes)
    if plateau["found"]:
        assert plateau["plateau_gbps"] > 0 and len(plateau["sizes_mib"]) >= 2
        assert entry["headline"]["source"] == "plateau"
    else:
        assert entry["headline"]["source"] == "largest_size_no_plateau" and entry["headline"]["no_plateau"] is True
    repeats = entry["repeats"]
    assert repeats["size_mib"] == max(sizes) and len(repeats["bandwidths_gbps"]) == 3
    assert min(repeats["bandwidths_gbps"]) <= repeats["median_gbps"] <= max(repeats["bandwidths_gbps"])
    assert repeats["cv_pct"] >= 0 and repeats["cv_warn"] == (repeats["cv_pct"] > 5.0)
    assert entry["headline"]["bandwidth_gbps"] > 0
    assert envelope["environment"]["torch_version"] == torch.__version__
    # one device, one worker: the together phase does not run, and says why (issue 35)
    assert data["together"] == {"unavailable": "one device and workers_per_gpu 1: every device at once is this device "
                                               "alone, measured in the alone phase"}


def test_quick_measures_only_the_largest_size(tmp_path):
    envelope, elapsed = _run(tmp_path, {"quick": True})
    assert elapsed < 45  # about 2 s idle
    data = envelope["data"]
    _validator().validate(data)
    assert envelope["status"] == "ok" and data["plan"]["name"] == "cpu-default-quick"
    (entry,) = data["devices"]
    measured = [point for point in entry["sweep"] if point["status"] == "measured"]
    assert [point["size_mib"] for point in measured] == [256]
    assert all(point["reason"] for point in entry["sweep"] if point["status"] == "skipped")
    assert entry["plateau"]["found"] is False
    assert entry["headline"]["source"] == "quick_largest_size"
    assert entry["headline"]["bandwidth_gbps"] == entry["repeats"]["median_gbps"] > 0


def test_a_size_that_does_not_fit_is_skipped_with_its_reason(tmp_path):
    envelope, unused_elapsed = _run(tmp_path, {"sizes_mib": [1, 4, 16, 64, 100000000]})
    _validator().validate(envelope["data"])
    (entry,) = envelope["data"]["devices"]
    last = entry["sweep"][-1]
    assert last["status"] == "skipped" and "exceed" in last["reason"] and last["regime"] == "not measured"
    assert entry["repeats"]["size_mib"] == 64


def test_bad_parameter_is_an_error_envelope(tmp_path):
    envelope, unused_elapsed = _run(tmp_path, {"repeats": 0})
    assert envelope["status"] == "error" and "repeats" in envelope["reason"]


def _small_plan(**changes):
    params = dict(probe_defaults("membw"), sizes_mib=[1, 2, 4], target_point_ms=5.0, l2_multiple=0.0)
    params.update(changes)
    return resolve_plan(params, "cpu")


def _as_gpu_data(entry, plan):
    """The data a GPU run writes: cuda device identity, GPU method text; the rest as measured."""
    entry["device"] = {"kind": "cuda", "index": 0, "name": "NVIDIA H200", "uuid": "GPU-0123", "memory_total_mib": 143771,
                       "compute_capability": "9.0"}
    gpu_plan = dict(plan, name="gpu-default")
    return {"method": membw.method_of("cuda"), "plan": gpu_plan, "devices": [entry], "errors": []}


def test_gpu_state_during_the_middle_repeat_matches_schema():
    calls = []

    def take():
        calls.append(time.time())
        return dict(SNAPSHOT, time_unix_s=round(time.time(), 3))

    plan = _small_plan()
    entry = DeviceRun(torch, CPU, plan, take).run()
    assert entry["status"] == "ok" and len(calls) == 1
    state = entry["repeats"]["gpu_state"]
    assert state["taken"] in ("before", "during", "after") and state["snapshot"]["sm_clock_mhz"] == 1980
    _validator().validate(_as_gpu_data(entry, plan))


def test_a_failing_size_is_recorded_and_the_sweep_goes_on(monkeypatch):
    real = device_run.CopyBuffers

    class Flaky(real):
        def __init__(self, torch_module, device, size_mib, dtype):
            if size_mib == 2:
                raise RuntimeError("CUDA out of memory (simulated)")
            super().__init__(torch_module, device, size_mib, dtype)

    monkeypatch.setattr(device_run, "CopyBuffers", Flaky)
    plan = _small_plan(dtype="uint8")
    entry = DeviceRun(torch, CPU, plan, None).run()
    assert entry["status"] == "partial"
    assert [point["status"] for point in entry["sweep"]] == ["measured", "failed", "measured"]
    assert "simulated" in entry["sweep"][1]["reason"] and "2 MiB failed" in entry["problems"][0]
    assert entry["repeats"]["size_mib"] == 4
    data = {"method": membw.method_of("cpu"), "plan": plan, "devices": [entry], "errors": []}
    _validator().validate(data)
    status, reason = device_outcome.decide([entry])
    assert status == "partial" and "2 MiB failed" in reason


def test_a_failing_device_does_not_stop_the_others(monkeypatch):
    broken = dict(CPU, index=1, torch_device="no-such-device")
    plan = _small_plan()
    entries = [DeviceRun(torch, CPU, plan, None).run(), DeviceRun(torch, broken, plan, None).run()]
    assert entries[0]["status"] == "ok"
    assert entries[1]["status"] == "error" and entries[1]["error"]["type"] == "NothingMeasured"
    assert all(point["status"] == "failed" for point in entries[1]["sweep"])
    status, reason = device_outcome.decide(entries)
    assert status == "partial" and "cpu:1" in reason
    data = {"method": membw.method_of("cpu"), "plan": plan, "devices": entries, "errors": []}
    _validator().validate(data)

    def explode(*args):
        raise RuntimeError("device lost")

    monkeypatch.setattr(device_run, "last_level_cache", explode)
    lost = DeviceRun(torch, CPU, plan, None).run()
    assert lost["status"] == "error" and lost["error"] == {"type": "RuntimeError", "message": "device lost"}
    _validator().validate(dict(data, devices=[entries[0], lost]))
    assert device_outcome.decide([lost])[0] == "error"


def test_copy_check_catches_a_copy_that_did_not_happen(monkeypatch):
    buffers = device_run.CopyBuffers(torch, CPU, 1, "float32")
    assert buffers.verify(1000) == (True, 1002)  # 262144 elements: 1001 at every 262nd (0 .. 262000), plus the last
    monkeypatch.setattr(buffers, "copy", lambda: None)
    assert buffers.verify(1000)[0] is False
    assert buffers.buffer_bytes == MIB and float(buffers.src.min()) >= 0.0 and float(buffers.src.max()) < 1.0


def test_cuda_requested_without_a_gpu_is_unavailable(tmp_path):
    if torch.cuda.is_available():
        pytest.skip("this machine has a GPU")
    envelope, unused_elapsed = _run(tmp_path, {"device": "cuda"})
    _validator().validate(envelope["data"])
    assert envelope["status"] == "unavailable" and "no CUDA GPU" in envelope["reason"]
    assert envelope["data"]["devices"] == []


def test_without_torch_a_host_without_gpus_says_there_is_nothing_to_measure(tmp_path):
    """Issue 46: a machine without GPUs read 'torch is not importable ...; set gpufleet_python to a Python that has
    it' for every GPU probe, as if another Python would give them something to measure."""
    envelope = run_probe(tmp_path, "membw", env=dict(os.environ, PYTHONPATH=shadow_module(tmp_path)))
    assert envelope["status"] == "unavailable"
    nothing = nothing_to_measure()
    if nothing is None:  # the rig: a GPU host without torch needs torch
        assert envelope["reason"].startswith("torch is not importable by ")
    else:
        assert envelope["reason"].startswith(nothing + "; besides, torch is not importable by "), envelope["reason"]
        assert "PCI: 0 NVIDIA GPU(s)" in envelope["reason"] or "/sys/bus/pci/devices: not readable" in envelope["reason"]
