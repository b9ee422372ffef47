"""The load probe's GPU path, run on the CPU: torch's cuda namespace is faked (real CPU matmuls, host-timed events) and
NVML is the fake in fake_load_nvml. This checks the whole data layout an H200 produces against the schema, the status
and the errors; the rates themselves mean nothing here."""
import contextlib
import os
import sys
import types

import torch as real_torch

from ansible_collections.gpufleet.validation.plugins.plugin_utils.store.schemas import schema_validator
import fake_load_nvml
import load
from fake_cuda_event import FakeEvent
from probelib.nvml.access import NvmlSession
from probelib.params import probe_defaults

GIB = 2 ** 30
PARAMS = {"duration_s": 1.0, "sample_interval_s": 0.05, "process_interval_s": 0.25, "warmup_s": 0.3, "settle_s": 0.05,
          "cooldown_s": 0.0, "matmul_n": 256}


class FakeStream:
    def __init__(self, device=None):
        self.device = device

    def synchronize(self):
        pass


class FakeCuda:
    def __init__(self, module, count):
        self.module = module
        self.count = count
        self.Event = FakeEvent
        self.Stream = FakeStream

    def is_available(self):
        return True

    def device_count(self):
        return self.count

    def get_device_properties(self, index):
        return types.SimpleNamespace(name="NVIDIA H200", uuid="0000-%d" % index, total_memory=141 * GIB, major=9, minor=0)

    def device(self, index):
        return contextlib.nullcontext()

    def stream(self, stream):
        return contextlib.nullcontext()

    def synchronize(self, device=None):
        pass

    def empty_cache(self):
        self.module.busy.clear()


class FakeTorch:
    """Real CPU torch for the arithmetic; creating an operand on cuda:i marks GPU i busy in the fake NVML."""

    def __init__(self, module, count=2, broken_index=None):
        self.cuda = FakeCuda(module, count)
        self.version = types.SimpleNamespace(cuda="13.0")
        self.__version__ = "2.11.0+fake"
        self.module = module
        self.broken_index = broken_index
        self.bfloat16 = real_torch.bfloat16
        self.float16 = real_torch.float16
        self.matmul = real_torch.matmul
        self.isfinite = real_torch.isfinite

    def _on(self, device):
        index = int(device.split(":")[1])
        if index == self.broken_index:
            raise RuntimeError("CUDA out of memory. Tried to allocate 128.00 MiB")
        self.module.busy.add(index)

    def __getattr__(self, name):
        return getattr(real_torch, name)  # dtypes, Generator, finfo: the real CPU torch's

    def Generator(self, device=None):  # pylint: disable=invalid-name  # torch's name
        return real_torch.Generator()

    def randn(self, *shape, device=None, dtype=None, generator=None):
        if device is not None and device != "cpu":
            self._on(device)
        return real_torch.randn(*shape, dtype=dtype, generator=generator)

    def empty(self, *shape, device=None, dtype=None):
        self._on(device)
        return real_torch.empty(*shape, dtype=dtype)


def _collect(monkeypatch, module, torch, **given):
    params = dict(probe_defaults("load"))
    params.update(PARAMS)
    params.update(given)
    monkeypatch.setitem(sys.modules, "torch", torch)
    monkeypatch.setattr(load, "_open_session", lambda: NvmlSession().open(importer=lambda: module))
    return load.collect(params)


def test_two_loaded_gpus_give_the_full_layout(monkeypatch):
    module = fake_load_nvml.LoadModule()
    result = _collect(monkeypatch, module, FakeTorch(module), cooldown_s=0.2)
    assert result.status == "ok", result.reason
    assert result.reason == "" and module.shut_down
    data = result.data
    schema_validator("load.schema.json").validate(data)
    assert [gpu["uuid"] for gpu in data["gpus"]] == ["GPU-0000-0", "GPU-0000-1"]
    for gpu in data["gpus"]:
        assert gpu["nvml_index"] == gpu["index"]
        assert gpu["load"]["products"] > 0 and gpu["load"]["achieved_tflops"] > 0 and gpu["load"]["output_finite"] is True
        assert gpu["load"]["start_s"] < 0.1 and 0.9 <= gpu["load"]["end_s"] < 3.0 and gpu["load"]["tflops_series"]
        assert gpu["idle_before"]["sm_clock_mhz"] == 345 and gpu["idle_before"]["t_s"] < 0
        assert gpu["idle_after"]["sm_clock_mhz"] == 345 and gpu["idle_after"]["t_s"] > gpu["load"]["end_s"]
        assert gpu["active"]["sm_clock_mhz"]["median"] == 1755 and gpu["active"]["samples"] >= 5
        assert gpu["differences"]["active_minus_idle"]["power_w"] == 623.0  # 698 - 75
        assert gpu["clocks"]["rose"] is True and gpu["clocks"]["basis"] == "rose"
        assert gpu["throttle"]["sw_power_cap_fraction"] == 1.0 and gpu["throttle"]["hardware_slowdown"] is False
        assert gpu["power"]["limit_w"] == 700.0 and gpu["power"]["fraction_over_limit"] == 0.0
        window = gpu["clock_event_durations_window"]
        assert 0.9 <= window["window_s"] < 3.0 and window["reasons"]["hw_thermal_slowdown"]["ns"] == 0
        assert window["reasons"]["sw_power_cap"]["share_pct"] > 90  # the fake counts sw_power_cap all the time it is busy
        assert "NVML has no duration counter for hw_slowdown" in window["reasons"]["hw_slowdown"]["unavailable"]
    samples = data["samples"]
    assert samples["columns"][0] == "t_s" and samples["reason_bits"]["sw_power_cap"] == 4
    assert samples["rounds"] >= 10 and samples["interval_s_actual"]["count"] == samples["rounds"] - 1
    assert all(len(rows) == samples["rounds"] for rows in samples["rows_per_gpu"].values())
    processes = data["processes"]
    assert processes["own_listed"] is True and os.getpid() in processes["own_pids"]
    assert [entry["pid"] for entry in processes["unexpected"]] == [fake_load_nvml.STRANGER]
    assert processes["unexpected"][0]["gpus"] == ["GPU-0000-1"]
    cooldown = data["cooldown"]
    assert cooldown["requested_s"] == 0.2 and cooldown["waited_s"] >= 0.2 and len(cooldown["gpus"]) == 2
    assert cooldown["gpus"][0]["drop_c"] == 0 and cooldown["gpus"][0]["end_above_idle_before_c"] == 0


def test_a_gpu_that_fails_is_recorded_and_the_other_still_runs(monkeypatch):
    module = fake_load_nvml.LoadModule()
    result = _collect(monkeypatch, module, FakeTorch(module, broken_index=1))
    assert result.status == "partial"
    assert result.reason.startswith("failed: GPU 1 load (allocating three 256x256 bf16 matrices: RuntimeError: CUDA out of memory")
    data = result.data
    schema_validator("load.schema.json").validate(data)
    first, second = data["gpus"]
    assert first["load"]["products"] > 0 and "error" not in first["load"]
    assert second["load"]["products"] == 0 and "unavailable" in second["load"]["achieved_tflops"]
    assert second["clocks"]["basis"] == "did_not_rise"  # it stayed idle
    assert data["errors"] == [{"gpu": 1, "what": "load", "error": second["load"]["error"]}]
    assert data["cooldown"]["gpus"] == [] and "not requested" in data["cooldown"]["note"]


def test_a_gpu_nvml_does_not_know_is_loaded_but_not_sampled(monkeypatch):
    module = fake_load_nvml.LoadModule(count=1)
    result = _collect(monkeypatch, module, FakeTorch(module))
    assert result.status == "partial" and "GPU 1 nvml (no NVML device has the UUID 'GPU-0000-1'" in result.reason
    data = result.data
    schema_validator("load.schema.json").validate(data)
    assert data["gpus"][1]["load"]["products"] > 0 and "unavailable" in data["gpus"][1]["active"]
    assert list(data["samples"]["rows_per_gpu"]) == ["GPU-0000-0"]


def test_without_nvml_the_load_is_not_run(monkeypatch):
    def missing():
        raise ImportError("No module named 'pynvml'")

    module = fake_load_nvml.LoadModule()
    monkeypatch.setitem(sys.modules, "torch", FakeTorch(module))
    monkeypatch.setattr(load, "_open_session", lambda: NvmlSession().open(importer=missing))
    params = dict(probe_defaults("load"))
    params.update(PARAMS)
    result = load.collect(params)
    assert result.status == "unavailable" and "pip install nvidia-ml-py" in result.reason
    assert not module.busy
    schema_validator("load.schema.json").validate(result.data)
    assert [gpu["uuid"] for gpu in result.data["gpus"]] == ["GPU-0000-0", "GPU-0000-1"]


def test_hardware_slowdown_time_in_the_window_is_recorded(monkeypatch):
    module = fake_load_nvml.LoadModule(busy_rates={fake_load_nvml.fake_pynvml.HW_THERMAL: 0.2})
    result = _collect(monkeypatch, module, FakeTorch(module))
    schema_validator("load.schema.json").validate(result.data)
    for gpu in result.data["gpus"]:
        window = gpu["clock_event_durations_window"]
        assert 15 <= window["reasons"]["hw_thermal_slowdown"]["share_pct"] <= 25
        assert window["reasons"]["sw_power_cap"]["ns"] == 0 and window["violation_status"]["thermal"]["ns"] > 0


def test_a_gpu_nvml_does_not_know_has_no_window_counters(monkeypatch):
    module = fake_load_nvml.LoadModule(count=1)
    result = _collect(monkeypatch, module, FakeTorch(module))
    assert result.data["gpus"][0]["clock_event_durations_window"]["window_s"] > 0
    assert "no NVML device has the UUID" in result.data["gpus"][1]["clock_event_durations_window"]["unavailable"]


def test_every_gpu_checks_its_products_against_one_reference(monkeypatch):
    module = fake_load_nvml.LoadModule()
    result = _collect(monkeypatch, module, FakeTorch(module), verify_every_checkpoints=1)
    assert result.status == "ok", result.reason
    schema_validator("load.schema.json").validate(result.data)
    first, second = (gpu["correctness"] for gpu in result.data["gpus"])
    for correctness in (first, second):
        assert correctness["mode"] == "bitwise" and correctness["deterministic"] is True
        assert correctness["checks_run"] > 0 and correctness["mismatching_checks"] == 0 and correctness["mismatches"] == []
        assert len(correctness["reference_sha256"]) == 64
    # the same seeded operands on both GPUs: the same reference, bit for bit
    assert first["reference_sha256"] == second["reference_sha256"]
    assert result.data["verification"]["seed"] == result.data["plan"]["seed"]
    assert result.data["verification"]["operands_made_on"] == "cuda:0"


def test_an_injected_bit_flip_is_caught_with_the_gpu_the_product_and_the_magnitude(monkeypatch):
    module = fake_load_nvml.LoadModule()
    injection = {"gpu": 1, "check": 2, "element": 257, "bit": 14}
    result = _collect(monkeypatch, module, FakeTorch(module), verify_every_checkpoints=1, inject_bit_flip=injection)
    schema_validator("load.schema.json").validate(result.data)
    clean, hit = (gpu["correctness"] for gpu in result.data["gpus"])
    assert clean["mismatching_checks"] == 0 and "injected" not in clean
    assert hit["injected"] == injection and hit["checks_run"] >= 3
    assert hit["mismatching_checks"] == 1 and hit["mismatching_elements"] == 1
    (mismatch,) = hit["mismatches"]
    assert mismatch["check"] == 2 and mismatch["product"] == 16  # 8 products per checkpoint, checked every checkpoint
    assert mismatch["first_index"] == [1, 1] and mismatch["differing_elements"] == 1
    assert mismatch["max_abs_diff"] == abs(mismatch["first_got"] - mismatch["first_expected"]) > 0
    # the flip lasted one check: the next product overwrote it
    assert hit["checks_run"] > mismatch["check"]


def test_a_first_gpu_that_cannot_make_the_operands_leaves_them_to_the_cpu_and_the_others_still_check(monkeypatch):
    module = fake_load_nvml.LoadModule()
    result = _collect(monkeypatch, module, FakeTorch(module, broken_index=0), verify_every_checkpoints=1)
    schema_validator("load.schema.json").validate(result.data)
    assert result.data["verification"]["operands_made_on"] == "cpu"
    broken, working = result.data["gpus"]
    assert "no reference product: allocating three" in broken["correctness"]["unavailable"]
    assert working["correctness"]["checks_run"] > 0 and working["correctness"]["mismatching_checks"] == 0
