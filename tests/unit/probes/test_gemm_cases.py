"""The gemm probe's test-case registry, plans, parameters and dtype rules (no torch)."""
import pytest

from probe_packages.gemm import params as gemm_params
from probe_packages.gemm.cases import ShapeError, build_plan, iterations_for, parse_shapes
from probe_packages.gemm.dtypes import CPU_UNAVAILABLE, DTYPES, shape_unavailability, static_unavailability


def _names(plan):
    return [case.name for case in plan["cases"]]


def test_gpu_full_plan():
    plan = build_plan("cuda", False, None)
    names = _names(plan)
    assert plan["name"] == "gpu-full"
    assert plan["dtypes"] == ["fp32", "tf32", "bf16", "fp16", "fp8_e4m3"]
    assert names[:4] == ["square-1024", "square-2048", "square-4096", "square-8192"]
    # 2 prefill and 3 decode token counts against 4 projections, then 2 awkward shapes
    assert len(names) == 4 + 2 * 4 + 3 * 4 + 2
    assert "prefill-qkv-m4096-n10240-k8192" in names
    assert "prefill-mlp-up-m8192-n28672-k8192" in names
    assert "prefill-mlp-down-m8192-n8192-k28672" in names
    assert "decode-o-m32-n8192-k8192" in names
    assert names[-2:] == ["awkward-m8191-n8193-k8191", "awkward-m8208-n8208-k8208"]
    assert plan["calibration_case"].name == "square-8192"
    case = plan["cases"][names.index("decode-mlp-up-m1-n28672-k8192")]
    assert (case.group, case.m, case.n, case.k) == ("decode", 1, 28672, 8192)


def test_quick_plans():
    gpu = build_plan("cuda", True, ["fp32"])
    assert gpu["name"] == "gpu-quick" and gpu["dtypes"] == ["bf16"]
    assert _names(gpu) == ["square-8192", "decode-mlp-up-m1-n28672-k8192"]
    cpu = build_plan("cpu", True, None)
    assert _names(cpu) == ["square-512", "decode-mlp-up-m1-n3584-k1024"]
    assert cpu["repeat_time_s"] < gpu["repeat_time_s"]


def test_cpu_full_plan_is_small():
    plan = build_plan("cpu", False, ["fp32", "bf16"])
    assert plan["name"] == "cpu-full"
    assert max(case.m * case.n * case.k for case in plan["cases"]) <= 1024 ** 3
    assert _names(plan)[:3] == ["square-256", "square-512", "square-1024"]
    assert "awkward-m511-n513-k511" in _names(plan)


def test_shapes_parameter_replaces_the_production_shapes():
    shapes = [{"name": "my-proj", "m": 16, "n": 4096, "k": 4096}]
    plan = build_plan("cuda", False, None, shapes)
    names = _names(plan)
    assert plan["production_shapes_source"] == "parameter shapes"
    assert "my-proj" in names and not any(name.startswith(("prefill", "decode")) for name in names)
    assert "square-8192" in names and "awkward-m8191-n8193-k8191" in names
    assert _names(build_plan("cuda", True, None, shapes)) == ["square-8192", "my-proj"]


@pytest.mark.parametrize("shapes", [
    [], {"name": "x"}, [{"name": "x", "m": 1, "n": 2}], [{"name": "", "m": 1, "n": 2, "k": 3}],
    [{"name": "x", "m": 0, "n": 2, "k": 3}], [{"name": "x", "m": True, "n": 2, "k": 3}],
    [{"name": "x", "m": 1, "n": 2, "k": 3}, {"name": "x", "m": 1, "n": 2, "k": 3}],
])
def test_bad_shapes(shapes):
    with pytest.raises(ShapeError):
        parse_shapes(shapes)


def test_a_given_shape_may_not_reuse_a_registry_name():
    with pytest.raises(ShapeError, match="square-8192"):
        build_plan("cuda", False, None, [{"name": "square-8192", "m": 1, "n": 2, "k": 3}])


def test_iterations_for():
    assert iterations_for(0.1, 1.39e-3, 3, 20000) == 72   # ceil(0.1 / 1.39 ms)
    assert iterations_for(0.1, 0.07, 3, 20000) == 3       # at least the minimum
    assert iterations_for(0.1, 1e-6, 3, 20000) == 20000   # at most the maximum
    assert iterations_for(0.1, 0.0, 3, 20000) == 20000


def test_dtype_rules():
    assert static_unavailability(DTYPES["tf32"], "cpu", None) == CPU_UNAVAILABLE == "no tensor cores on the CPU path"
    assert static_unavailability(DTYPES["fp8_e4m3"], "cpu", None) == CPU_UNAVAILABLE
    assert static_unavailability(DTYPES["fp16"], "cpu", None) == CPU_UNAVAILABLE
    assert static_unavailability(DTYPES["fp32"], "cpu", None) is None
    assert static_unavailability(DTYPES["bf16"], "cpu", None) is None
    assert static_unavailability(DTYPES["fp8_e4m3"], "cuda", (9, 0)) is None
    assert static_unavailability(DTYPES["fp8_e4m3"], "cuda", (8, 9)) is None
    assert static_unavailability(DTYPES["fp8_e4m3"], "cuda", (8, 0)) == \
        "compute capability 8.0 is below 8.9, the first with FP8 tensor cores"
    assert "TF32" in static_unavailability(DTYPES["tf32"], "cuda", (7, 0))
    assert shape_unavailability(DTYPES["fp8_e4m3"], 8193, 8191) == \
        "torch._scaled_mm needs K and N to be multiples of 16 for fp8_e4m3 (K=8191, N=8193)"
    assert shape_unavailability(DTYPES["fp8_e4m3"], 28672, 8192) is None
    assert shape_unavailability(DTYPES["bf16"], 8193, 8191) is None
    assert (DTYPES["fp8_e4m3"].input_bytes, DTYPES["fp8_e4m3"].output_bytes) == (1, 2)


def test_bandwidth_parameter_per_device():
    uuid = "GPU-6b6bb8c4-0000-0000-0000-000000000000"
    assert gemm_params.bandwidth_for(None, "cuda", uuid)[0] is None
    assert gemm_params.bandwidth_for(4100, "cuda", uuid)[0] == 4100.0
    assert gemm_params.bandwidth_for({uuid: 4050.5}, "cuda", uuid) == (4050.5, "memory_bandwidth_gbps given for %s" % uuid)
    missing, note = gemm_params.bandwidth_for({"GPU-other": 4050.5}, "cuda", uuid)
    assert missing is None and "no entry for %s" % uuid in note
    assert gemm_params.bandwidth_for({"cpu": 20.0}, "cpu", {"unavailable": "a CPU has no UUID"})[0] == 20.0
    gemm_params.check_bandwidth({uuid: 4000})
    for bad in (0, -1, True, "4000", {uuid: 0}, {}, [4000]):
        with pytest.raises(gemm_params.GemmParameterError):
            gemm_params.check_bandwidth(bad)


def test_peak_parameter():
    gemm_params.check_peaks({"bf16": 989, "fp8_e4m3": 1979})
    assert gemm_params.peak_for({"bf16": 989}, "cuda", "bf16") == 989.0
    assert gemm_params.peak_for({"bf16": 989}, "cuda", "fp16") is None
    assert gemm_params.peak_for({"bf16": 989}, "cpu", "bf16") is None  # a GPU SKU's peak is no CPU roof
    for bad in ({"fp8": 1979}, {"bf16": 0}, {}, 989):
        with pytest.raises(gemm_params.GemmParameterError):
            gemm_params.check_peaks(bad)
    assert gemm_params.check_dtypes(["bf16", "bf16", "fp32"]) == ["bf16", "fp32"]
    for bad in ([], ["fp64"], "bf16"):
        with pytest.raises(gemm_params.GemmParameterError):
            gemm_params.check_dtypes(bad)
