"""The p2p GPU code path on the CPU: torch.cuda is a stand-in, the 'GPU' tensors are host tensors and the copies real.

It checks the wiring and the data layout that N GPUs produce (every ordered pair, UUID matching, links, failures kept
inside their pair), not any bandwidth.
"""
import contextlib
import json
import sys
import time
import types

import torch as real_torch

from ansible_collections.gpufleet.validation.plugins.plugin_utils.store.schemas import schema_validator
import p2p
from probe_packages.p2p import copies, pair_run
from probelib.runner import ProbeResult, build_envelope
from fake_cuda_event import FakeEvent  # noqa: E402
from probelib.params import probe_defaults

GIB = 1 << 30


class QueryEvent(FakeEvent):
    def query(self):
        return False  # the spin is still running when the copies are queued: covered


class FakeStream:
    def __init__(self, device=None):
        self.device = device
        self.waited = []

    def wait_event(self, event):
        self.waited.append(event)


class FakeCuda:
    Event = QueryEvent

    def __init__(self, count, no_peer=(), peer_raises=(), sleep=True, free_bytes=100 * GIB):
        self.count, self.no_peer, self.peer_raises, self.free_bytes = count, set(no_peer), set(peer_raises), free_bytes
        self.slept = 0
        self.emptied = 0
        if sleep:
            self._sleep = self._spin

    def _spin(self, cycles):
        self.slept += 1
        time.sleep(min(cycles / 2e9, 1e-3))

    def is_available(self):
        return True

    def device_count(self):
        return self.count

    def get_device_properties(self, index):
        return types.SimpleNamespace(name="NVIDIA H200", uuid="0000-%d" % index, total_memory=141 * GIB, major=9, minor=0)

    def mem_get_info(self, index):
        return self.free_bytes, 141 * GIB

    def can_device_access_peer(self, src, dst):
        if (src, dst) in self.peer_raises:
            raise RuntimeError("CUDA error: an illegal memory access was encountered")
        return (src, dst) not in self.no_peer

    @staticmethod
    def Stream(device=None):  # noqa: N802 (torch's name)
        return FakeStream(device)

    @staticmethod
    def stream(stream):
        return contextlib.nullcontext()

    def synchronize(self, index=None):
        pass

    def empty_cache(self):
        self.emptied += 1


class FakeTorch:
    """Real CPU torch, except that torch.cuda is the stand-in and every CUDA device is the host."""

    def __init__(self, count=3, **cuda):
        self.cuda = FakeCuda(count, **cuda)
        self.version = types.SimpleNamespace(cuda="13.0")
        self.__version__ = "2.11.0+fake"

    def __getattr__(self, name):
        return getattr(real_torch, name)

    @staticmethod
    def device(*unused_args):
        return real_torch.device("cpu")


def _topology():
    """NVML's order differs from torch's: NVML 0, 1, 2 are torch 2, 0, 1."""
    return {"topology": {"method": "nvml", "gpu_count": 3, "pairs": [
        {"gpu_a": 0, "gpu_b": 1, "method": "nvml", "common_ancestor": "SYS", "nvlink_count": 18, "nvlink_via": "nvswitch",
         "numa_node_a": 1, "numa_node_b": 0, "link_class": "NV18"},
        {"gpu_a": 0, "gpu_b": 2, "method": "nvml", "common_ancestor": "PIX", "nvlink_count": 0, "nvlink_via": "none",
         "numa_node_a": 1, "numa_node_b": 1, "link_class": "PIX"},
        {"gpu_a": 1, "gpu_b": 2, "method": "nvml", "common_ancestor": "SYS", "nvlink_count": 0, "nvlink_via": "none",
         "numa_node_a": 0, "numa_node_b": 1, "link_class": "SYS"}]},
        "nvml_uuids": ["GPU-0000-2", "GPU-0000-0", "GPU-0000-1"]}


def _collect(monkeypatch, fake, topology=None, **params):
    monkeypatch.setitem(sys.modules, "torch", fake)
    monkeypatch.setattr(p2p, "_read_topology", lambda: topology or _topology())
    merged = dict(probe_defaults("p2p"), sizes_mib=[1, 2], iterations=3, repeats=2, warmup=1, latency_copies=20)
    merged.update(params)
    result = p2p.collect(merged)
    data = json.loads(json.dumps(result.data, allow_nan=False))
    schema_validator("p2p.schema.json").validate(data)
    envelope = build_envelope("p2p", ProbeResult(result.status, data, result.reason, result.environment), "2026-01-01T00:00:00+00:00", 1.0)
    schema_validator("envelope.schema.json").validate(envelope)
    return result


def _by_pair(result):
    return {(pair["src"], pair["dst"]): pair for pair in result.data["pairs"]}


def test_every_ordered_pair_of_three_gpus_is_measured_and_classed(monkeypatch):
    fake = FakeTorch(3)
    result = _collect(monkeypatch, fake)
    assert result.status == "ok" and result.reason == "" and result.data["errors"] == []
    assert result.environment == {"torch_version": "2.11.0+fake", "torch_cuda_version": "13.0"}
    pairs = _by_pair(result)
    assert sorted(pairs) == [(0, 1), (0, 2), (1, 0), (1, 2), (2, 0), (2, 1)]
    assert [device["nvml_index"] for device in result.data["devices"]] == [1, 2, 0]
    assert result.data["topology"] == {"source": "nvml", "gpu_count": 3}
    # torch 0 -> 2 is NVML 1 -> 0: NV18 through NVSwitch; torch 2 -> 1 is NVML 0 -> 2: PIX; torch 0 -> 1 is NVML 1 -> 2: SYS
    assert (pairs[(0, 2)]["link_class"], pairs[(0, 2)]["nvlink_via"], pairs[(0, 2)]["link_kind"]) == ("NV18", "nvswitch", "nvlink")
    assert (pairs[(2, 1)]["link_class"], pairs[(2, 1)]["pcie_path"], pairs[(2, 1)]["same_numa"]) == ("PIX", "PIX", True)
    assert (pairs[(0, 1)]["numa_node_src"], pairs[(0, 1)]["numa_node_dst"], pairs[(0, 1)]["same_numa"]) == (0, 1, False)
    assert (pairs[(1, 0)]["numa_node_src"], pairs[(1, 0)]["numa_node_dst"]) == (1, 0)
    for (src, dst), pair in pairs.items():
        assert pair["src_uuid"] == "GPU-0000-%d" % src and pair["dst_uuid"] == "GPU-0000-%d" % dst
        assert pair["peer_access"] and pair["verified"] and "error" not in pair
        for phase in ("unidirectional", "bidirectional"):
            section = pair[phase]
            assert [point["size_bytes"] for point in section["sweep"]] == [1 << 20, 2 << 20]
            assert all(point["verified"] and point["gbps"] > 0 for point in section["sweep"])
            assert section["spin_covered_enqueue"] is True and section["headline_gbps"] > 0
        for point in pair["bidirectional"]["sweep"]:
            assert point["src_to_dst_gbps"] > 0 and point["dst_to_src_gbps"] > 0
        latency = pair["latency"]
        assert (latency["size_bytes"], latency["samples"], latency["copies_per_sample"]) == (8, 2, 20)
        assert latency["median_us"] > 0 and latency["verified"] and latency["spin_covered_enqueue"]
    matrix = result.data["matrix"]
    assert matrix["unidirectional_gbps"][0][2] == pairs[(0, 2)]["unidirectional"]["headline_gbps"]
    assert matrix["link_class"][2][1] == "PIX" and matrix["latency_us"][1][1] is None
    assert result.data["plan"]["spin_kernel"] == "torch.cuda._sleep" and fake.cuda.slept > 0
    assert fake.cuda.emptied >= 6  # buffers given back after every pair


def test_failures_stay_inside_their_pair(monkeypatch):
    # 1 -> 2: no peer access, so 2 -> 1's bidirectional copies cannot run either; asking about 2 -> 0 raises,
    # which also fails 0 -> 2's bidirectional copies
    fake = FakeTorch(3, no_peer={(1, 2)}, peer_raises={(2, 0)})
    result = _collect(monkeypatch, fake)
    assert result.status == "partial"
    pairs = _by_pair(result)
    for key in ((1, 2), (2, 0)):
        assert not pairs[key]["peer_access"] and not pairs[key]["verified"] and "unidirectional" not in pairs[key]
    assert "no peer access from cuda:1 to cuda:2" in pairs[(1, 2)]["error"]
    assert "illegal memory access" in pairs[(2, 0)]["error"]
    for key, why in (((2, 1), "bidirectional: RuntimeError: no peer access from cuda:1 to cuda:2"),
                     ((0, 2), "bidirectional: RuntimeError: CUDA error: an illegal memory access")):
        partly = pairs[key]
        assert "unidirectional" in partly and "latency" in partly and "bidirectional" not in partly
        assert partly["error"].startswith(why) and partly["peer_access"] and not partly["verified"]
    for key in ((0, 1), (1, 0)):
        assert pairs[key]["verified"] and "error" not in pairs[key]
    whats = sorted((error["pair"], error["what"]) for error in result.data["errors"])
    assert whats == [("0->2", "bidirectional"), ("1->2", "peer_access"), ("2->0", "peer_access"), ("2->1", "bidirectional")]
    assert "traceback" in [error for error in result.data["errors"] if error["pair"] == "0->2"][0]
    assert result.reason.startswith("4 pair(s) failed: ")
    matrix = result.data["matrix"]
    assert "no peer access" in matrix["unidirectional_gbps"][1][2]["unavailable"]
    assert "not measured: bidirectional" in matrix["bidirectional_gbps"][0][2]["unavailable"]
    assert matrix["unidirectional_gbps"][0][2] == pairs[(0, 2)]["unidirectional"]["headline_gbps"]


def test_a_copy_that_changed_nothing_fails_the_data_check(monkeypatch):
    real = copies.same_bytes
    monkeypatch.setattr(copies, "same_bytes", lambda torch, target, source: target.numel() != 2 << 20 and real(torch, target, source))
    result = _collect(monkeypatch, FakeTorch(2), topology={"topology": {"unavailable": "no NVML"}, "nvml_uuids": {"unavailable": "no NVML"}})
    assert result.status == "partial"
    pair = _by_pair(result)[(0, 1)]
    assert [point["verified"] for point in pair["unidirectional"]["sweep"]] == [True, False]
    # every copy ran, so the pair has no error; it is not verified and the run's errors name the size
    assert not pair["verified"] and "error" not in pair and "unidirectional" in pair and "latency" in pair
    mismatch = [error for error in result.data["errors"] if error["pair"] == "0->1"]
    assert mismatch == [{"pair": "0->1", "what": "data_check", "error": "%s: the destination differs from the source after "
                         "the copies at 2097152 bytes" % phase} for phase in ("unidirectional", "bidirectional")]
    assert "0->1 data_check" in result.reason
    assert pair["link_class"] == {"unavailable": "topology unavailable: no NVML"}
    assert result.data["topology"] == {"unavailable": "no NVML"}


def test_without_torch_cuda_sleep_queueing_is_timed_and_said_so(monkeypatch):
    result = _collect(monkeypatch, FakeTorch(2, sleep=False), quick=True, bidirectional=False, iterations=1)
    assert result.status == "ok"
    assert "queueing of the copies is included" in result.data["plan"]["spin_kernel"]["unavailable"]
    assert "no torch.cuda._sleep" in result.data["method"]["timing"]
    assert result.data["plan"]["sizes_bytes"] == [64 << 20, 256 << 20] and result.data["plan"]["repeats"] == 1
    for pair in result.data["pairs"]:
        assert "bidirectional" not in pair and pair["verified"]
        assert pair["unidirectional"]["spin_covered_enqueue"] is False and pair["latency"]["spin_covered_enqueue"] is False
    assert "turned off" in result.data["matrix"]["bidirectional_gbps"][0][1]["unavailable"]


def test_sizes_are_lowered_to_the_free_memory(monkeypatch):
    # 10 MiB free: 40 % = 4 MiB for 2 buffers -> 2 MiB at most
    result = _collect(monkeypatch, FakeTorch(2, free_bytes=10 << 20), sizes_mib=[1, 2, 4])
    plan = result.data["plan"]
    assert plan["sizes_bytes"] == [1 << 20, 2 << 20] and plan["sizes_limited_by"] == "device_memory"
    assert plan["least_free_memory_bytes"] == 10 << 20


def test_one_gpu_is_unavailable(monkeypatch):
    result = _collect(monkeypatch, FakeTorch(1))
    assert result.status == "unavailable" and result.reason == "1 GPU(s) visible: no pair to measure"
    assert result.data["pairs"] == [] and result.data["devices"][0]["uuid"] == "GPU-0000-0"
    assert result.data["matrix"]["unidirectional_gbps"] == [[None]]


def test_an_unexpected_failure_stays_with_its_pair(monkeypatch):
    def broken(self, entry):
        entry["unidirectional"] = None
        raise RuntimeError("CUDA error: unspecified launch failure")
    monkeypatch.setattr(pair_run.PairRun, "run", broken)
    result = _collect(monkeypatch, FakeTorch(2))
    assert result.status == "error" and "unspecified launch failure" in result.reason
    for pair in result.data["pairs"]:
        assert pair["error"] == "pair: RuntimeError: CUDA error: unspecified launch failure"
        assert not pair["verified"] and not pair["peer_access"] and "unidirectional" not in pair
