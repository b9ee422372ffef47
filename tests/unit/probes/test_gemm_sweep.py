"""The gemm probe's GPU path, run on the CPU through a fake torch.cuda, and its data checked against the schema.

The fake keeps the real torch for tensors and matmuls (torch._scaled_mm runs on the CPU too) and replaces only
torch.cuda: events timed by perf_counter, device properties of an H200, memory info. So the code that only a GPU
reaches (SM count, L2, snapshots, the fp8 path, TF32 switching, per-case failures) runs here.
"""
import contextlib
import types

import pytest

torch = pytest.importorskip("torch")

import gemm  # noqa: E402  (probes/ is on sys.path through conftest)
from probe_packages.gemm import sweep as gemm_sweep  # noqa: E402
from probe_packages.gemm.cases import GemmCase, awkward_case, build_plan, square_case  # noqa: E402
from fake_cuda_event import FakeEvent  # noqa: E402
from ansible_collections.gpufleet.validation.plugins.plugin_utils.store.schemas import schema_validator  # noqa: E402
from probelib.params import probe_defaults

UUID = "GPU-6b6bb8c4-1c4f-7a3e-9d2a-000000000001"


class FakeCuda:
    Event = FakeEvent

    def __init__(self, major=9, minor=0):
        self.properties = types.SimpleNamespace(name="NVIDIA H200", uuid=UUID[4:], total_memory=150754820096,
                                                major=major, minor=minor, multi_processor_count=132, L2_cache_size=62914560)

    def get_device_properties(self, index):
        return self.properties

    def device(self, index):
        return contextlib.nullcontext()

    def synchronize(self):
        return None

    def mem_get_info(self, index):
        return 140 * 2 ** 30, 141 * 2 ** 30

    def empty_cache(self):
        return None


class FakeTorch:
    def __init__(self, cuda):
        self.cuda = cuda

    def __getattr__(self, name):
        return getattr(torch, name)


def snapshot(uuid):
    return {"time_unix_s": 1764470000.5, "sm_clock_mhz": 1980, "memory_clock_mhz": 3201, "power_draw_w": 612.4,
            "temperature_c": 51, "other_processes": [],
            "clock_event_reasons": {"mask": 4, "mask_hex": "0x0000000000000004", "names": ["sw_power_cap"],
                                    "slowdown_active": False, "method": "nvmlDeviceGetCurrentClocksEventReasons"}}


def gpu_device(index, capability):
    return {"kind": "cuda", "index": index, "torch_device": "cpu", "name": "NVIDIA H200", "uuid": UUID,
            "memory_total_mib": 143771, "compute_capability": capability}


def small_plan(dtypes):
    """The GPU plan with its shapes shrunk to what the CPU multiplies in milliseconds."""
    plan = build_plan("cuda", False, dtypes)
    plan["cases"] = [square_case(128), GemmCase("decode-mlp-up-m1-n512-k256", "decode", 1, 512, 256),
                     awkward_case(127, 129, 127, "odd dims")]
    plan["calibration_case"] = square_case(128)
    plan["copy_buffer_max_bytes"] = 4 * 2 ** 20
    return plan


def params(**overrides):
    values = dict(probe_defaults("gemm"), repeat_time_s=0.002, warmup_time_s=0.001)
    values.update(overrides)
    gemm.check_params(values)
    return values


def _validator():
    return schema_validator("gemm.schema.json")


@pytest.fixture(name="gpu_data")
def fixture_gpu_data(monkeypatch):
    real_build = gemm_sweep.build_operation

    def failing_build(torch_module, spec, case, torch_device, fast_accum):
        if spec.name == "fp16" and case.group == "decode":
            raise RuntimeError("CUDA out of memory. Tried to allocate 20.00 MiB\nmore text")
        return real_build(torch_module, spec, case, torch_device, fast_accum)
    monkeypatch.setattr(gemm_sweep, "build_operation", failing_build)

    hopper = FakeTorch(FakeCuda(9, 0))
    plan = small_plan(["fp32", "tf32", "bf16", "fp16", "fp8_e4m3"])
    # a huge bandwidth puts the ridge at 2 FLOP/byte, so that the CPU's small squares are compute-bound against 989
    given = params(peak_tflops={"bf16": 989}, memory_bandwidth_gbps={UUID: 500000.0})
    data = {"plan": gemm.plan_record(plan, given), "conventions": dict(gemm.CONVENTIONS),
            "torch_settings": gemm.torch_settings(hopper), "devices": [], "errors": []}
    first = gemm_sweep.DeviceSweep(hopper, gpu_device(0, "9.0"), plan, given, snapshot)
    data["devices"].append(first.run())
    data["errors"].extend(first.errors)
    ampere = FakeTorch(FakeCuda(8, 0))
    second = gemm_sweep.DeviceSweep(ampere, gpu_device(1, "8.0"), small_plan(["fp8_e4m3", "bf16"]),
                                    params(), snapshot)
    data["devices"].append(second.run())
    data["errors"].extend(second.errors)
    data["devices"].append(gemm.failed_device(gpu_device(2, "9.0"), "RuntimeError: CUDA error: unspecified launch failure"))
    return data


def _result(device, dtype, name):
    return next(result for result in device["results"] if result["dtype"] == dtype and result["name"] == name)


def test_gpu_shaped_data_matches_the_schema(gpu_data):
    _validator().validate(gpu_data)
    status, reason = gemm.outcome_of(gpu_data)
    assert status == "partial"
    assert "device 0 fp16 decode-mlp-up-m1-n512-k256: timing: RuntimeError: CUDA out of memory" in reason


def test_gpu_device_record(gpu_data):
    hopper = gpu_data["devices"][0]
    assert hopper["status"] == "partial"
    assert hopper["device"]["multi_processor_count"] == 132 and hopper["device"]["l2_cache_bytes"] == 62914560
    assert hopper["roofline"]["ridge_bandwidth_source"] == "parameter memory_bandwidth_gbps"
    assert hopper["roofline"]["bandwidth_gbps"] == 500000.0
    assert hopper["roofline"]["own_copy"] == {"unavailable": "not measured: the parameter gave the bandwidth"}
    assert set(hopper["dtypes"]) == {"fp32", "tf32", "bf16", "fp16", "fp8_e4m3"}
    assert hopper["dtypes"]["tf32"]["allow_tf32"] is True and hopper["dtypes"]["fp32"]["allow_tf32"] is False
    assert torch.backends.cuda.matmul.allow_tf32 is False  # restored
    bf16 = hopper["dtypes"]["bf16"]
    assert bf16["roof_before_timing"]["peak_source"] == bf16["roof_after_timing"]["peak_source"] == "parameter peak_tflops"
    assert bf16["roof_before_timing"]["peak_tflops"] == 989
    fp32 = hopper["dtypes"]["fp32"]
    assert fp32["roof_before_timing"]["peak_source"] == "calibration: square-128 timed briefly before the sweep"
    assert fp32["roof_after_timing"]["peak_source"] == "best measured shape"
    assert fp32["roof_after_timing"]["peak_tflops"] >= fp32["best"]["tflops"]
    assert hopper["dtypes"]["fp8_e4m3"]["input_element_bytes"] == 1
    assert hopper["gpu_state_before"]["sm_clock_mhz"] == 1980


def test_gpu_cases(gpu_data):
    hopper = gpu_data["devices"][0]
    square = _result(hopper, "bf16", "square-128")
    assert square["classified_before_timing"]["classification"] == "compute-bound"
    assert square["measurement"]["tflops"] > 0 and square["measurement"]["output_finite"] is True
    assert square["measurement"]["output_nonzero"] is True and square["measurement"]["repeats"] == 3
    explained = square["explained_after_timing"]
    assert explained["peak_tflops"] == 989 and explained["far_below_bound"] is True
    # the CPU reaches a sliver of 989: the sentence names the SM fill and the power cap the snapshot reported
    assert "too few tiles to fill 132 SMs" in explained["explanation"]
    assert "sw_power_cap" in explained["explanation"]
    decode = _result(hopper, "bf16", "decode-mlp-up-m1-n512-k256")
    assert decode["classified_before_timing"] == {
        "classification": "memory-bound", "peak_tflops": 989, "peak_source": "parameter peak_tflops",
        "bandwidth_gbps": 500000.0, "ridge_flop_per_byte": 1.978}
    fp8_awkward = _result(hopper, "fp8_e4m3", "awkward-m127-n129-k127")
    assert fp8_awkward["measurement"] == {
        "unavailable": "torch._scaled_mm needs K and N to be multiples of 16 for fp8_e4m3 (K=127, N=129)"}
    assert fp8_awkward["explained_after_timing"]["unavailable"].startswith("not measured")
    assert _result(hopper, "fp8_e4m3", "square-128")["measurement"]["tflops"] > 0
    failed = _result(hopper, "fp16", "decode-mlp-up-m1-n512-k256")
    assert failed["measurement"]["unavailable"] == "failed: RuntimeError: CUDA out of memory. Tried to allocate 20.00 MiB"
    assert failed["classified_before_timing"]["classification"] in ("memory-bound", "compute-bound")  # written before it ran
    assert {"device_index": 0, "dtype": "fp16", "case": "decode-mlp-up-m1-n512-k256",
            "error": "timing: RuntimeError: CUDA out of memory. Tried to allocate 20.00 MiB"} in gpu_data["errors"]


def test_older_gpu_and_own_copy(gpu_data):
    ampere = gpu_data["devices"][1]
    assert ampere["status"] == "ok"
    assert ampere["dtypes"]["fp8_e4m3"] == {"unavailable": "compute capability 8.0 is below 8.9, the first with FP8 tensor cores"}
    assert ampere["roofline"]["ridge_bandwidth_source"] == "own copy measurement"
    assert ampere["roofline"]["own_copy"]["buffer_bytes"] == 4 * 2 ** 20
    assert ampere["roofline"]["bandwidth_gbps"] == ampere["roofline"]["own_copy"]["bandwidth_gbps"] > 0
    assert [result["dtype"] for result in ampere["results"]] == ["bf16"] * 3
    assert gpu_data["devices"][2]["status"] == "error" and gpu_data["devices"][2]["results"] == []


class FakeReader:
    def first_value(self, functions, handle, convert=None):
        return 700.0, functions[0]


class FakeReads:
    """NVML reads of a GPU that idles at 80 W, then runs at 1980 MHz and reaches the power cap after a while."""

    def __init__(self):
        self.reader = FakeReader()
        self.handle = object()
        self.calls = 0

    def sample(self):
        self.calls += 1
        capped = self.calls % 7 == 0
        return [1980, 3201, 80.0 if self.calls == 1 else 650.0, 45, 0x4 if capped else 0x1, 100], {}


def test_burst_and_sustained_are_timed_with_the_gpu_state_inside_each_window():
    hopper = FakeTorch(FakeCuda(9, 0))
    plan = small_plan(["bf16", "fp16"])
    given = params(peak_tflops={"bf16": 989}, memory_bandwidth_gbps={UUID: 500000.0}, burst_window_s=0.01,
                   sustained_settle_s=0.05, sustained_window_s=0.02, idle_wait_max_s=0.3)
    plan["power_state_dtypes"] = ["bf16"]
    plan["power_state_settings"] = gemm.power_state_settings(given)
    plan["power_state_settings"].update(sampling_interval_s=0.001, burst_idle_hold_s=0.01)
    sweep = gemm_sweep.DeviceSweep(hopper, gpu_device(0, "9.0"), plan, given, snapshot, lambda uuid: FakeReads())
    device = sweep.run()
    states = device["dtypes"]["bf16"]["power_states"]
    assert states["case"] == "square-128" and states["nvml"] == "sampled"
    for method in ("burst", "sustained"):
        state = states[method]
        assert state["method"] == method and state["repeats"] == 3 and len(state["repeats_tflops"]) == 3
        assert state["tflops"] == sorted(state["repeats_tflops"])[1]
    assert states["sustained"]["power_limit_w"] == 700.0
    assert "idle_before" in states["burst"]["windows"][0]
    assert device["dtypes"]["fp16"]["power_states"]["unavailable"].startswith("burst and sustained are measured for bf16 only")
    assert all(result["timed_state"]["state"] == "power_capped" for result in device["results"]
               if "state" in result["timed_state"])
    data = {"plan": gemm.plan_record(plan, given), "conventions": dict(gemm.CONVENTIONS),
            "torch_settings": gemm.torch_settings(hopper), "devices": [device], "errors": sweep.errors}
    _validator().validate(data)
