"""The load probe's findings held against the rules: clocks rise, no hardware/thermal slowdown, power within limit,
no other process."""
import pytest

from ansible_collections.gpufleet.validation.plugins.plugin_utils.probe_kit.registry import probe_metrics

from probe_packages.load.processes import aggregate
from probe_packages.load.summary import HARDWARE_SLOWDOWN, THERMAL, clocks_rose
from probelib.nvml.clock_event_reasons import SLOWDOWN_REASONS

from helpers import GPU0, RIG_OVERRIDES, baselines, health_ok, judge_fleet, one, recorded, rules

OWN_PID = 1910  # the probe's own pid in the rig's recorded run
RUN_S = 60.0
ROUNDS = 13  # the processes are listed every 5 s of the 60 s load


def gpu(basis="rose", slowdown=(), fraction_over=0.0, cap=0.9):
    """The rig's recorded GPU 0 under load (650 TFLOP/s, SM clock median 1500 MHz, at most 71 C) whose clocks show
    `basis` (rose, idle_at_max, did_not_rise, or unknown: the idle clock was not read), with the clock event reasons
    `slowdown` from 12.5 s on, sw_power_cap in `cap` of the active samples, and `fraction_over` of them above the power
    limit."""
    entry = recorded("load")["data"]["gpus"][0]
    load_part = entry["load"]
    factor = 650.0 / load_part["achieved_tflops_active"]
    load_part.update(achieved_tflops_active=650.0, achieved_tflops=round(load_part["achieved_tflops"] * factor, 2),
                     tflops_series=[[t_s, round(tflops * factor, 2)] for t_s, tflops in load_part["tflops_series"]])
    active = entry["active"]
    active["sm_clock_mhz"]["median"] = 1500.0
    active["temperature_c"]["max"] = 71.0
    idle = {"rose": 345, "idle_at_max": 1980, "did_not_rise": 1450, "unknown": None}[basis]
    entry["idle_before"]["sm_clock_mhz"] = idle if idle is not None else {"unavailable": "NVML did not answer"}
    entry["differences"]["active_minus_idle"]["sm_clock_mhz"] = (
        1500.0 - idle if idle is not None else {"unavailable": "sm_clock_mhz is not known on both sides"})
    entry["clocks"] = clocks_rose(idle, active["sm_clock_mhz"], entry["clocks"]["max_sm_clock_mhz"], entry["clocks"]["threshold_mhz"])
    throttle = entry["throttle"]
    samples_load = throttle["samples_load"]
    reasons = {"sw_power_cap": {"first_seen_s": 0.5, "fraction_active": cap, "samples_load": round(cap * samples_load)}}
    for name in slowdown:
        reasons[name] = {"first_seen_s": 12.5, "fraction_active": round((RUN_S - 12.5) / (RUN_S - 5.0), 4),
                         "samples_load": samples_load - 25}
    seen = sorted(name for name in reasons if name in SLOWDOWN_REASONS)
    throttle.update(reasons=dict(sorted(reasons.items())), hardware_slowdown=any(name in reasons for name in HARDWARE_SLOWDOWN),
                    thermal=any(name in reasons for name in THERMAL), slowdown_reasons_seen=seen,
                    first_slowdown_s=12.5 if seen else None, sw_power_cap_fraction=cap)
    power = entry["power"]
    power["fraction_over_limit"] = fraction_over
    if fraction_over > 0:
        power.update(max_w=721.3, max_w_load=724.0)
    return entry


def load(gpus, unexpected=(), own_listed=True):
    """The rig's recorded load result with `gpus`; the processes NVML listed on them every 5 s: the probe itself (unless
    own_listed is False: NVML never showed its pid) and the `unexpected` ones ({pid, name, gpus})."""
    envelope = recorded("load")
    data = envelope["data"]
    data["gpus"] = gpus
    uuids = [entry["uuid"] for entry in gpus]
    observations = []
    for step in range(ROUNDS):
        for uuid in uuids:
            listed = [{"pid": OWN_PID, "name": "python3", "kind": "compute"}] if own_listed else []
            listed += [{"pid": other["pid"], "name": other["name"], "kind": "compute"} for other in unexpected if uuid in other["gpus"]]
            observations.append((step * RUN_S / (ROUNDS - 1), uuid, listed))
    data["processes"] = aggregate(observations, [OWN_PID])
    return envelope


def judge(gpus, unexpected=(), own_listed=True):
    envelopes = {"health": health_ok(), "load": load(gpus, unexpected, own_listed)}
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
