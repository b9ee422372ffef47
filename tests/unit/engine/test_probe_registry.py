"""The registry and the declarations: a reader named once, profiles of the user's own checked once, each on its own."""
import pytest

from ansible_collections.gpufleet.validation.plugins.plugin_utils.judge.measurement import Device, Measurement
from ansible_collections.gpufleet.validation.plugins.plugin_utils.probe_kit.declaration import DeclarationError
from ansible_collections.gpufleet.validation.plugins.plugin_utils.probe_kit.judging import ProbeJudging
from ansible_collections.gpufleet.validation.plugins.plugin_utils.probe_kit.metric_catalogue import MetricSpec
from ansible_collections.gpufleet.validation.plugins.plugin_utils.probe_kit.registry import (
    all_profiles,
    judging_of,
    profile_probes,
)
from ansible_collections.gpufleet.validation.plugins.plugin_utils.run_variables_check import host_problems

GPU = {"kind": "cuda", "index": 0, "uuid": "GPU-toy"}
TOY_RATE = MetricSpec("toy.rate_gbps", "Toy rate", "GB/s", "higher", drift_tolerance=0.1)


def toy_measurements(data):
    return [Measurement("toy.rate_gbps", "GB/s", "higher", Device.of(GPU), "the toy rate", value=data.get("rate"))]


def toy(**fields):
    return ProbeJudging(**fields)


def test_a_baseline_check_and_the_metrics_come_from_the_one_reader():
    probe = toy(measurements=toy_measurements, baseline_checks={"rate": TOY_RATE})
    assert set(probe.checks) == {"rate"}
    [metric] = probe.metrics({"rate": 12.5})
    assert (metric.metric_id, metric.value, metric.gpu_uuid) == ("toy.rate_gbps", 12.5, "GPU-toy")


def test_the_probes_own_checks_sit_beside_its_baseline_checks():
    def own(host, data, rule, context):
        return []
    probe = toy(checks={"own": own}, measurements=toy_measurements, baseline_checks={"rate": TOY_RATE})
    assert set(probe.checks) == {"own", "rate"} and probe.checks["own"] is own


def test_a_metrics_function_given_wins_over_the_measurements():
    def metrics(data):
        return ["given"]
    assert toy(measurements=toy_measurements, metrics=metrics).metrics({}) == ["given"]


@pytest.mark.parametrize("fields, words", [
    ({"baseline_checks": {"rate": "toy.rate_gbps"}}, "needs measurements"),
    ({"checks": {"rate": print}, "measurements": toy_measurements, "baseline_checks": {"rate": "toy.rate_gbps"}},
     "rate declared both in checks and in baseline_checks"),
])
def test_an_unsound_declaration_says_what_is_wrong(fields, words):
    with pytest.raises(DeclarationError, match=words):
        toy(**fields)


def test_the_shipped_measurement_probes_name_their_reader_once():
    for name, checks in (("membw", {"headline_bandwidth", "repeat_cv", "together_bandwidth"}),
                         ("hostbw", {"pinned_h2d", "pinned_d2h", "together_uplink"}),
                         ("gemm", {"bf16_burst", "bf16_sustained", "fp8_burst", "fp8_sustained", "correctness", "together_sustained",
                                   "together_throttle"})):
        probe = judging_of(name)
        assert set(probe.checks) == checks and probe.metrics is not None and probe.measurements is not None


def test_a_broken_profile_of_ones_own_is_reported_once_and_the_sound_ones_stay():
    found, problems = all_profiles({"mine": ["health"], "broken": ["health", "nvbandwidth"]})
    assert found["mine"] == ["health"] and "broken" not in found
    assert len(problems) == 1 and problems[0].startswith("profile broken names unknown probe(s) nvbandwidth (known probes: ")


def test_choosing_the_broken_profile_is_one_problem_not_two():
    problems = host_problems({"gpufleet_profiles": {"broken": ["nvbandwidth"]}, "gpufleet_profile": "broken"}, ["health"], None)
    assert len(problems) == 1 and "profile broken names unknown probe(s) nvbandwidth" in problems[0]


def test_a_profile_named_nowhere_lists_the_declared_and_the_sound_own_profiles():
    problems = host_problems({"gpufleet_profiles": {"mine": ["health"]}, "gpufleet_profile": "bogus"}, ["health"], None)
    assert len(problems) == 1 and "'bogus', not a profile" in problems[0] and "mine" in problems[0]


def test_profiles_of_ones_own_that_are_not_a_mapping_are_refused():
    assert all_profiles(["health"])[1] == [
        "gpufleet_profiles must map a profile name to a list of probes, e.g. {mine: [health, gemm]}, not list"]
    with pytest.raises(ValueError, match="must map a profile name"):
        profile_probes("quick", ["health"])


def test_an_own_profile_runs_in_the_declared_order_whatever_the_order_written():
    assert profile_probes("mine", {"mine": ["gemm", "health", "gemm"]}) == ["health", "gemm"]
