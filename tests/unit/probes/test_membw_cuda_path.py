"""The membw GPU code path (CUDA events, mem_get_info, the L2 size, the snapshot during the middle repeat) driven
through a stand-in torch.cuda whose tensors live on the CPU: it checks the wiring, not a GPU's numbers."""
import contextlib
import time
import types

import pytest

from ansible_collections.gpufleet.validation.plugins.plugin_utils.store.schemas import schema_validator
import membw
from probe_packages.membw.device_run import DeviceRun
from probe_packages.membw.plan import MIB, resolve_plan
from fake_cuda_event import FakeEvent  # noqa: E402
from probelib.params import probe_defaults

torch = pytest.importorskip("torch")


class FakeCuda:
    """Enough of torch.cuda for the probe: one 'GPU' with 8 GiB free and a 50 MiB L2."""

    Event = FakeEvent

    def __init__(self, free_bytes):
        self.free_bytes = free_bytes
        self.synchronized = 0
        self.emptied = 0

    @staticmethod
    def device(index):
        assert index == 0
        return contextlib.nullcontext()

    def synchronize(self, index=None):
        self.synchronized += 1

    def empty_cache(self):
        self.emptied += 1

    def mem_get_info(self, index):
        return self.free_bytes, 8 * 1024 * MIB

    @staticmethod
    def get_device_properties(index):
        return types.SimpleNamespace(L2_cache_size=50 * MIB)


class FakeTorch:
    def __init__(self, free_bytes):
        self.cuda = FakeCuda(free_bytes)

    def __getattr__(self, name):
        return getattr(torch, name)


GPU = {"kind": "cuda", "index": 0, "torch_device": "cpu", "name": "NVIDIA H200 (stand-in)", "uuid": "GPU-0123",
       "memory_total_mib": 8192, "compute_capability": "9.0"}


def _snapshot():
    return {"time_unix_s": round(time.time(), 3), "sm_clock_mhz": 1980, "memory_clock_mhz": 3201, "power_draw_w": 400.0,
            "temperature_c": 45, "clock_event_reasons": {"unavailable": "not supported by this GPU"}, "other_processes": []}


def _validate(entry, plan):
    schema_validator("membw.schema.json").validate({"method": membw.method_of("cuda"), "plan": plan, "devices": [entry], "errors": []})


def test_gpu_path_sweep_plateau_repeats_and_state():
    fake = FakeTorch(free_bytes=8 * 1024 * MIB)
    # a stand-in 'GPU' with a 50 MiB L2: l2_multiple 0.02 lets 1 MiB and up be plateau candidates
    plan = resolve_plan(dict(probe_defaults("membw"), sizes_mib=[1, 2, 4, 8192], target_point_ms=5.0, l2_multiple=0.02), "cuda")
    entry = DeviceRun(fake, GPU, plan, _snapshot).run()
    _validate(entry, plan)
    assert entry["status"] == "ok", entry["problems"]
    assert entry["last_level_cache_bytes"] == 50 * MIB and "torch" in entry["last_level_cache_source"]
    assert entry["free_memory_bytes_at_start"] == 8 * 1024 * MIB
    statuses = [point["status"] for point in entry["sweep"]]
    assert statuses == ["measured", "measured", "measured", "skipped"]  # two 8 GiB buffers cannot fit in 8 GiB free
    assert entry["repeats"]["size_mib"] == 4
    state = entry["repeats"]["gpu_state"]
    assert state["taken"] in ("before", "during", "after") and state["snapshot"]["sm_clock_mhz"] == 1980
    assert fake.cuda.emptied >= 4  # buffers are given back after every size and after the repeats


def test_gpu_path_quick_walks_down_to_the_largest_size_that_fits():
    fake = FakeTorch(free_bytes=2048 * MIB)  # margin 1024 MiB: 2 x 256 fits, 2 x 1024 does not
    plan = resolve_plan(dict(probe_defaults("membw"), quick=True, sizes_mib=[4, 256, 1024]), "cuda")
    entry = DeviceRun(fake, GPU, plan, _snapshot).run()
    _validate(entry, plan)
    by_size = {point["size_mib"]: point for point in entry["sweep"]}
    assert by_size[1024]["status"] == "skipped" and "exceed" in by_size[1024]["reason"]
    assert by_size[256]["status"] == "measured" and by_size[256]["regime"] == "quick (no sweep)"
    assert by_size[4]["status"] == "skipped" and "quick mode" in by_size[4]["reason"]
    assert entry["headline"]["source"] == "quick_largest_size" and entry["headline"]["sizes_mib"] == [256]
