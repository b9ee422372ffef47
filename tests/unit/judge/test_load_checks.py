"""The load probe's findings held against the rules: clocks rise, no hardware/thermal slowdown, power within limit,
no other process."""
import pytest

from ansible_collections.gpufleet.validation.plugins.plugin_utils.probes.registry import probe_metrics

from helpers import GPU0, RIG_OVERRIDES, baselines, health_ok, judge_fleet, one, rules

ENVELOPE = {"schema_version": "1", "host": "rig", "probe": "load", "status": "ok", "started": "2026-11-30T03:00:00+00:00",
            "duration_s": 70.0, "command": [], "environment": {}, "reason": ""}


def gpu(basis="rose", slowdown=(), fraction_over=0.0, cap=0.9):
    return {"index": 0, "uuid": GPU0, "name": "NVIDIA H200", "nvml_index": 0,
            "load": {"achieved_tflops_active": 650.0},
            "active": {"sm_clock_mhz": {"median": 1500.0}, "temperature_c": {"max": 71.0}},
            "clocks": {"basis": basis, "rose": basis != "did_not_rise", "note": "SM clock note", "idle_sm_clock_mhz": 345.0,
                       "active_median_sm_clock_mhz": 1500.0, "threshold_mhz": 100.0},
            "throttle": {"hardware_slowdown": "hw_slowdown" in slowdown, "thermal": "hw_thermal_slowdown" in slowdown,
                         "slowdown_reasons_seen": list(slowdown), "first_slowdown_s": 12.5 if slowdown else None,
                         "sw_power_cap_fraction": cap, "reasons": {}},
            "power": {"limit_w": 700.0, "margin_pct": 2.0, "median_w": 690.0, "max_w_load": 705.0, "fraction_over_limit": fraction_over}}


def judge(gpus, unexpected=(), own_listed=True):
    data = {"method": {}, "plan": {}, "gpus": gpus, "samples": {}, "errors": [],
            "processes": {"own_pids": [1], "seen": [], "unexpected": list(unexpected), "own_listed": own_listed}}
    envelopes = {"health": health_ok(), "load": dict(ENVELOPE, data=data)}
    hosts = {"rig": {"envelopes": envelopes, "reached": True, "reason": "", "groups": [], "rule_overrides": RIG_OVERRIDES}}
    return judge_fleet("run6", hosts, baselines(), rules()).hosts["rig"]


@pytest.mark.parametrize("basis, status", [("rose", "pass"), ("idle_at_max", "pass"), ("did_not_rise", "fail"), ("unknown", "error")])
def test_clocks_must_rise_under_load(basis, status):
    assert one(judge([gpu(basis=basis)]), "load.clocks_rose", 0).status == status


def test_a_thermal_slowdown_fails_and_the_power_cap_is_only_recorded():
    verdict = judge([gpu(slowdown=("hw_thermal_slowdown",))])
    check = one(verdict, "load.no_slowdown", 0)
    assert check.status == "fail" and "hw_thermal_slowdown under load, first at 12.5 s" in check.reason
    calm = one(judge([gpu()]), "load.no_slowdown", 0)
    assert calm.status == "pass" and "sw_power_cap in 90 % of the samples" in calm.reason


@pytest.mark.parametrize("fraction, status", [(0.0, "pass"), (0.02, "pass"), (0.1, "fail")])
def test_power_within_its_limit(fraction, status):
    assert one(judge([gpu(fraction_over=fraction)]), "load.power_within_limit", 0).status == status


def test_another_process_fails_unless_the_probe_could_not_see_itself():
    stranger = [{"pid": 4242, "name": "python", "gpus": [GPU0]}]
    assert "pid 4242 (python)" in one(judge([gpu()], unexpected=stranger), "load.no_unexpected_process").reason
    assert one(judge([gpu()], unexpected=stranger), "load.no_unexpected_process").status == "fail"
    assert one(judge([gpu()], unexpected=stranger, own_listed=False), "load.no_unexpected_process").status == "warn"
    assert one(judge([gpu()]), "load.no_unexpected_process").status == "pass"


def test_load_metrics_per_gpu():
    data = {"gpus": [gpu()]}
    assert {(metric.metric_id, metric.value) for metric in probe_metrics("load", data)} == {
        ("load.achieved_tflops", 650.0), ("load.sm_clock_mhz", 1500.0), ("load.max_temperature_c", 71.0)}
