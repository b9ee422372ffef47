"""The fusion probe's pure parts: the byte accounting, the plan, the predicted speed-up and the sentence on its gap."""
import pytest

from probe_packages.fusion import compare, plan, summary, traffic
from probelib.runner import ParameterError

from probelib.params import load_spec, probe_defaults, problems


def test_the_unfused_chain_moves_11_tensors_and_the_fused_kernel_5():
    assert traffic.UNFUSED_PASSES == (2 + 1) + (2 + 1) + (1 + 1) + (2 + 1) == 11
    assert traffic.FUSED_PASSES == 4 + 1 == 5
    assert traffic.traffic_bytes("unfused", 1 << 20, 2) == 11 * (1 << 20) * 2
    assert traffic.traffic_bytes("fused", 1 << 20, 2) == 5 * (1 << 20) * 2
    assert traffic.predicted_speedup() == pytest.approx(2.2)
    # x, a, b, c, t1, t2, t3, y against x, a, b, c, y
    assert traffic.working_set_bytes("unfused", 10, 4) == 8 * 40 and traffic.working_set_bytes("fused", 10, 4) == 5 * 40


def test_the_accounting_says_its_derivation_in_words():
    record = traffic.accounting()
    assert [kernel["kernel"] for kernel in record["unfused_kernels"]] == ["mul", "add", "gelu", "mul"]
    assert record["unfused_kernels"][1] == {"kernel": "add", "reads": ["t1", "b"], "writes": "t2"}
    assert record["fused_kernels"][0]["reads"] == ["x", "a", "b", "c"]
    words = record["derivation"]
    assert "(2+1) + (2+1) + (1+1) + (2+1) = 11 x N x element_bytes" in words
    assert "4 + 1 = 5 x N x element_bytes" in words and "2.20x" in words


def _params(**given):
    params = dict(probe_defaults("fusion"))
    params.update(given)
    return params


def test_the_plan_picks_bf16_and_large_sizes_on_a_gpu_fp32_and_small_ones_on_the_cpu():
    gpu, cpu = plan.resolve_plan(_params(), "cuda"), plan.resolve_plan(_params(), "cpu")
    assert gpu["dtype"] == "bfloat16" and gpu["element_bytes"] == 2
    assert gpu["sizes_elements"] == [1 << k for k in (20, 22, 24, 26, 28)]
    assert cpu["dtype"] == "float32" and cpu["element_bytes"] == 4 and max(cpu["sizes_elements"]) < min(gpu["sizes_elements"]) * 4
    quick = plan.resolve_plan(_params(quick=True), "cuda")
    assert quick["name"] == "gpu-default-quick" and len(quick["sizes_elements"]) == 2
    assert plan.resolve_plan(_params(dtype="float16", sizes_elements=[8, 4, 8]), "cpu")["sizes_elements"] == [4, 8]


@pytest.mark.parametrize("given", [{"dtype": "int8"}, {"sizes_elements": [0]}, {"repeats": 0}, {"device": "tpu"},
                                   {"membw_bandwidth_gbps": -1}, {"membw_bandwidth_gbps": {"GPU-1": "fast"}}])
def test_bad_parameters_are_refused_by_the_spec(given):
    assert problems(load_spec("fusion"), given)


def test_fewer_max_than_min_iterations_is_refused_across_parameters():
    with pytest.raises(ParameterError):
        plan.check_params(_params(max_iterations=1, min_iterations=2))


def test_the_membw_reference_per_device_or_why_there_is_none():
    assert plan.membw_reference({"GPU-1": 4200.0}, "this run's membw", "cuda", "GPU-1") == (4200.0, "this run's membw")
    assert plan.membw_reference({"cpu": 20.0}, "", "cpu", {"unavailable": "no"})[0] == 20.0
    value, why = plan.membw_reference({"GPU-2": 4200.0}, "", "cuda", "GPU-1")
    assert value is None and "no entry for GPU-1" in why and "GPU-2" in why
    assert plan.membw_reference(None, "", "cuda", "GPU-1") == (None, plan.NO_MEMBW)
    assert plan.membw_reference(None, "membw did not run", "cuda", "GPU-1") == (None, "membw did not run")


def test_what_fits_counts_the_live_tensors_and_the_margin():
    assert plan.fits(1 << 20, 4, 1 << 40, 1024.0, 5.0) == (True, "")
    fit, why = plan.fits(1 << 28, 2, 4 << 30, 1024.0, 5.0)
    assert not fit and "9 tensors" in why


def explain(measured, unfused_pct, fused_pct, kind="cuda", working_set=1 << 30, cache=50 << 20):
    predicted = 2.2
    # measured / predicted = fused GB/s / unfused GB/s
    unfused_gbps = 1000.0
    return compare.explain(predicted, measured, 15.0, unfused_gbps, unfused_gbps * measured / predicted, unfused_pct,
                           fused_pct, 50.0, kind, working_set, cache)


def test_within_the_tolerance_both_are_bandwidth_bound():
    words = explain(2.1, 90.0, 86.0)
    assert words.startswith("measured 2.10x is within 15 % of the 2.20x") and "bandwidth-bound" in words
    # the same ratio far below the plateau is a coincidence of overheads, not the traffic
    assert "the agreement says nothing about the traffic" in explain(2.1, 5.0, 4.8)


def test_short_of_the_prediction_at_small_n_both_are_launch_bound():
    words = explain(1.1, 5.0, 8.0)
    assert "50 % below" in words and "neither version reaches 50 % of the membw copy plateau" in words
    assert "kernel launches" in words


def test_short_of_the_prediction_the_fused_kernel_does_not_reach_the_plateau():
    assert "the fused kernel only 40 %" in explain(1.2, 75.0, 40.0)
    assert "does not stream at the copy rate" in explain(1.6, 90.0, 65.0)


def test_above_the_prediction_the_unfused_chain_is_overhead_bound_or_the_fused_one_hit_the_cache():
    assert "the unfused chain reaches only 20 % of the membw copy plateau" in explain(4.0, 20.0, 36.0, kind="cpu")
    assert "operator dispatches" in explain(4.0, 20.0, 36.0, kind="cpu")
    words = explain(3.0, 90.0, 120.0, working_set=5 << 20)
    assert "above the membw copy plateau (120 %)" in words and "fits in the" in words


def test_without_the_membw_plateau_the_cause_is_not_decided():
    assert "the membw plateau is unknown here" in explain(1.0, None, None)
    assert "the membw plateau is unknown here" in explain(5.0, None, None)


def test_a_version_record_and_the_speedups():
    unfused = summary.version_record("unfused", 1 << 20, 2, 10, [2e-5, 1e-5, 3e-5], 4000.0, "")
    assert unfused["traffic_bytes"] == 11 * 2 ** 21 and unfused["time_per_iteration_s"] == 2e-5
    assert unfused["achieved_gbps"] == pytest.approx(11 * 2 ** 21 / 2e-5 / 1e9, rel=1e-5)
    assert unfused["of_membw_pct"] == pytest.approx(100 * unfused["achieved_gbps"] / 4000.0, rel=1e-5)
    fused = summary.version_record("fused", 1 << 20, 2, 10, [1e-5], None, "membw did not run")
    assert fused["of_membw_pct"] == {"unavailable": "membw did not run"}
    record = summary.speedups(unfused, fused, {"speedup_tolerance_pct": 15.0, "bandwidth_bound_pct": 50.0}, "cuda", None)
    assert record["predicted_speedup"] == 2.2 and record["measured_speedup"] == 2.0
    assert record["speedup_gap_pct"] == pytest.approx(-9.09091) and "within 15 %" in record["explanation"]
    none = summary.speedups(unfused, {"unavailable": "no triton"}, {"speedup_tolerance_pct": 15.0, "bandwidth_bound_pct": 50.0},
                            "cuda", None)
    assert none["measured_speedup"] == {"unavailable": "the fused version was not measured: no triton"}
    assert "no triton" in none["explanation"]
