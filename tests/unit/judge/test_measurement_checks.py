"""membw and hostbw results held against the H200 baseline's known-good values (recorded health + measured shapes)."""
import copy
import json
import os

import pytest

from ansible_collections.gpufleet.validation.plugins.plugin_utils.probe_kit.registry import probe_metrics

from helpers import RIG_OVERRIDES, baselines, health_ok, judge_fleet, one, recorded, rules

QUICK_SKIPPED = "quick mode measures only the largest size that fits"
QUICK_NO_PLATEAU = "quick mode measures one size only, so there is no sweep and no plateau"


def _spread(value, cv_pct):
    """Three repeats with median `value` whose coefficient of variation (sample standard deviation over the mean) is
    cv_pct: value - d, value, value + d with d = value x cv_pct / 100."""
    step = value * cv_pct / 100.0
    return [round(value - step, 3), value, round(value + step, 3)]


def membw(bandwidths, cv_pct=0.4, source="plateau"):
    """The rig's recorded membw result, GPU i's headline copy bandwidth bandwidths[i] (the plateau's and the repeats'
    median), its three repeats spread by cv_pct; source "quick_largest_size" is a quick run (the largest size alone,
    no sweep, no plateau)."""
    envelope = recorded("membw")
    data = envelope["data"]
    quick = source == "quick_largest_size"
    if quick:
        data["plan"].update(name="gpu-default-quick", quick=True)
    for entry, value in zip(data["devices"], bandwidths):
        repeats = entry["repeats"]
        buffer_bytes = repeats["size_mib"] * 2 ** 20
        samples = _spread(value, cv_pct)
        repeats.update(bandwidths_gbps=samples, median_gbps=value, cv_pct=cv_pct, cv_warn=cv_pct > repeats["cv_warn_pct"],
                       times_per_copy_s=[round(2 * buffer_bytes / (sample * 1e9), 9) for sample in samples])
        largest = entry["sweep"][-1]
        if quick:
            for point in entry["sweep"][:-1]:
                point.update(status="skipped", reason=QUICK_SKIPPED, regime="not measured", **{
                    key: {"unavailable": "skipped: " + QUICK_SKIPPED}
                    for key in ("iterations", "time_per_copy_s", "bandwidth_gbps", "copy_verified", "verified_elements")})
            largest["regime"] = "quick (no sweep)"
            entry["plateau"].update(found=False, plateau_gbps={"unavailable": QUICK_NO_PLATEAU}, sizes_mib=[],
                                    max_deviation_pct={"unavailable": QUICK_NO_PLATEAU}, includes_largest_size=False,
                                    reason=QUICK_NO_PLATEAU)
            entry["headline"] = {"bandwidth_gbps": value, "source": source, "sizes_mib": [largest["size_mib"]], "no_plateau": False}
        else:
            entry["plateau"]["plateau_gbps"] = value
            entry["headline"].update(bandwidth_gbps=value, source=source)
        largest.update(bandwidth_gbps=value, time_per_copy_s=round(2 * largest["buffer_bytes"] / (value * 1e9), 9))
    return envelope


def hostbw(h2d, d2h):
    """The rig's recorded hostbw result, each GPU's pinned H2D and D2H copies at the medians h2d and d2h (their repeats
    scaled alike)."""
    envelope = recorded("hostbw")
    for device in envelope["data"]["devices"]:
        link_raw = device["pcie"]["link_raw_gbps"]
        for result in device["results"]:
            if result["host_memory"] == "pinned" and result["direction"] in ("h2d", "d2h"):
                value = h2d if result["direction"] == "h2d" else d2h
                factor = value / result["median_gbps"]
                result.update(median_gbps=value, repeats_gbps=[round(sample * factor, 3) for sample in result["repeats_gbps"]],
                              pct_of_link_raw=round(100.0 * value / link_raw, 1))
    return envelope


def judge(**envelopes):
    envelopes = dict(envelopes, health=health_ok())
    hosts = {"rig": {"envelopes": envelopes, "reached": True, "reason": "", "groups": [], "rule_overrides": RIG_OVERRIDES}}
    return judge_fleet("run3", hosts, baselines(), rules()).hosts["rig"]


@pytest.mark.parametrize("measured, status, words", [
    (4300.0, "pass", "4300 GB/s, 101 % of the known-good 4258 GB/s (89.6 % of the datasheet's 4800 GB/s)"),
    (4100.0, "pass", "4100 GB/s, 96.3 % of the known-good 4258 GB/s (85.4 % of the datasheet's 4800 GB/s)"),
    (3900.0, "warn", "3900 GB/s, 91.6 % of the known-good 4258 GB/s (81.3 % of the datasheet's 4800 GB/s)"),
    (3442.0, "fail", "3442 GB/s, 80.8 % of the known-good 4258 GB/s (71.7 % of the datasheet's 4800 GB/s)")])
def test_membw_against_the_same_method_copy_reference(measured, status, words):
    verdict = judge(membw=membw([measured, 4300.0]))
    check = one(verdict, "membw.bandwidth", 0)
    assert check.status == status
    assert check.reference == 4257.9 and "torch_copy_4gib" in check.reference_source
    assert "repeated (plateau %s) %s" % (words.split(",")[0], words) in check.reason
    assert one(verdict, "membw.bandwidth", 1).status == "pass"


def test_membw_noisy_repeats_warn_and_say_to_diagnose():
    check = one(judge(membw=membw([4300.0, 4300.0], cv_pct=7.5)), "membw.repeat_cv", 0)
    assert check.status == "warn" and check.value == 7.5
    assert "diagnose" in check.reason


def test_membw_quick_run_is_named_as_such():
    check = one(judge(membw=membw([4300.0, 4300.0], source="quick_largest_size")), "membw.bandwidth", 0)
    assert "quick run, no sweep" in check.reason


def test_membw_on_the_cpu_path_is_skipped_with_the_reason():
    envelope = membw([40.0, 40.0])
    envelope["data"]["devices"] = envelope["data"]["devices"][:1]
    envelope["data"]["devices"][0]["device"] = {"kind": "cpu", "index": 0, "name": "CPU", "uuid": {"unavailable": "a CPU has no UUID"},
                                                "memory_total_mib": 2063731, "compute_capability": {"unavailable": "not a GPU"}}
    check = one(judge(membw=envelope), "membw.bandwidth")
    assert check.status == "skip" and "measured on the CPU" in check.reason


@pytest.mark.parametrize("h2d, status", [(55.4, "pass"), (50.0, "warn"), (40.0, "fail")])
def test_hostbw_pinned_against_nvbandwidth(h2d, status):
    verdict = judge(hostbw=hostbw(h2d, 55.1))
    check = one(verdict, "hostbw.pinned_h2d", 0)
    assert check.status == status and check.reference == 55.4
    assert one(verdict, "hostbw.pinned_d2h", 1).status == "pass"


def test_the_measurements_become_fleet_metrics():
    metrics = probe_metrics("membw", membw([4300.0, 4250.0])["data"]) + probe_metrics("hostbw", hostbw(55.0, 54.0)["data"])
    assert sorted((metric.metric_id, metric.gpu_index, metric.value) for metric in metrics) == [
        ("hostbw.pinned_d2h_gbps", 0, 54.0), ("hostbw.pinned_d2h_gbps", 1, 54.0),
        ("hostbw.pinned_h2d_gbps", 0, 55.0), ("hostbw.pinned_h2d_gbps", 1, 55.0),
        ("membw.bandwidth_gbps", 0, 4300.0), ("membw.bandwidth_gbps", 1, 4250.0)]


def test_an_unknown_sku_alone_is_not_compared_and_warns():
    """Left to its peers, but a lone host has none (issue 32): not a pass, a warn that says why."""
    health = health_ok()
    for entry in health["data"]["gpus"]:
        entry["name"] = "NVIDIA H999"
        entry["pci"]["device_id"] = "0x999910de"
    hosts = {"rig": {"envelopes": {"health": health, "membw": membw([4300.0, 4300.0])}, "reached": True, "reason": "",
                     "groups": [], "rule_overrides": copy.deepcopy(RIG_OVERRIDES)}}
    check = one(judge_fleet("run3", hosts, baselines(), rules()).hosts["rig"], "membw.bandwidth", 0)
    assert check.status == "warn" and "not compared: no usable baseline (no baseline matches NVIDIA H999" in check.reason
    assert "1 host of group unknown:NVIDIA H999 is too few to compare (at least 3 needed)" in check.reason


RIG_RUN = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))),
                       "docs", "examples", "h200x2", "20261130T035514Z-509823", "localhost")


def rig_result(probe):
    with open(os.path.join(RIG_RUN, probe + ".json")) as handle:
        return json.load(handle)


def test_a_gemm_result_from_before_the_two_states_is_skipped_with_the_reason():
    verdict = judge(gemm=rig_result("gemm"))
    for check_id in ("gemm.bf16_burst", "gemm.bf16_sustained", "gemm.fp8_burst", "gemm.fp8_sustained"):
        check = one(verdict, check_id, 0)
        assert check.status == "skip" and "older than the two named states" in check.reason, check_id


def test_fp8_missing_on_an_older_gpu_is_a_skip_with_the_probes_reason():
    gemm = rig_result("gemm")
    for entry in gemm["data"]["devices"]:
        entry["dtypes"]["fp8_e4m3"] = {"unavailable": "fp8 needs compute capability 8.9, this GPU has 8.0"}
    check = one(judge(gemm=gemm), "gemm.fp8_burst", 0)
    assert check.status == "skip" and "compute capability 8.9" in check.reason


def test_the_rigs_recorded_membw_and_hostbw_pass():
    verdict = judge(membw=rig_result("membw"), hostbw=rig_result("hostbw"))
    for check_id in ("membw.bandwidth", "membw.repeat_cv", "hostbw.pinned_h2d", "hostbw.pinned_d2h"):
        assert {check.status for check in verdict.checks if check.id == check_id} == {"pass"}, check_id
