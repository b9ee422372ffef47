"""Throttle history held against the rules: the load window's slowdown seconds (a 12 s HW slowdown in a 60 s load
fails, a blip does not, the power cap is only explained) and the since-driver-load counters in health (context: warn,
never fail)."""
import pytest

from probelib.nvml.clock_event_durations import NO_HW_SLOWDOWN_COUNTER, POLICIES, REASONS, duration

from helpers import health_ok, judge_fleet, judge_one, one, recorded, baselines, rules, RIG_OVERRIDES

NOT_SUPPORTED = "nvmlDeviceGetFieldValues NVML_FI_DEV_CLOCKS_EVENT_REASON_HW_POWER_BRAKE_SLOWDOWN (271): not supported by this GPU (NVML: return code 3)"


def _entry(seconds, window_s=None):
    entry = duration(int(seconds * 1e9), "nvmlDeviceGetFieldValues a field (1)")
    if window_s is not None:
        entry["share_pct"] = round(100.0 * entry["s"] / window_s, 3)
    return entry


def window(window_s=60.0, **seconds):
    """A clock_event_durations_window: each reason's seconds (0 unless given; None: not supported)."""
    reasons = {}
    for name in REASONS:
        value = seconds.get(name, 0.0)
        if name == "hw_slowdown":
            reasons[name] = {"unavailable": NO_HW_SLOWDOWN_COUNTER}
        elif value is None:
            reasons[name] = {"unavailable": NOT_SUPPORTED}
        else:
            reasons[name] = _entry(value, window_s)
    return {"window_s": window_s, "reasons": reasons, "violation_status": {policy: _entry(0.0, window_s) for policy in POLICIES}}


def judge_load(*windows):
    envelope = recorded("load")
    gpus = envelope["data"]["gpus"][:1] * len(windows)
    envelope["data"]["gpus"] = [dict(gpus[0], index=index, uuid="GPU-%d" % index) for index in range(len(windows))]
    for gpu, value in zip(envelope["data"]["gpus"], windows):
        gpu["clock_event_durations_window"] = value
    hosts = {"rig": {"envelopes": {"health": health_ok(), "load": envelope}, "reached": True, "reason": "", "groups": [],
                     "rule_overrides": RIG_OVERRIDES}}
    return judge_fleet("run6", hosts, baselines(), rules()).hosts["rig"]


def test_twelve_seconds_of_hw_slowdown_in_a_sixty_second_load_fails():
    check = one(judge_load(window(hw_thermal_slowdown=12.0, sw_power_cap=48.0)), "load.clock_event_durations", 0)
    assert check.status == "fail" and check.value == 12.0 and check.unit == "s"
    assert "hw_thermal_slowdown for 12 s during the 60 s load window (20 % of it): over 1 % of the window" in check.reason
    assert "check cooling" in check.reason


@pytest.mark.parametrize("seconds, status, words", [
    (0.0, "pass", "no hardware or thermal slowdown time during the 60 s load window"),
    (0.3, "pass", "a blip of at most 0.5 s, not counted"),
    (0.55, "warn", "longer than a 0.5 s blip, under the 1 % that fails"),
    (0.7, "fail", "over 1 % of the window"),
])
def test_a_power_brake_blip_passes_a_longer_one_warns_then_fails(seconds, status, words):
    check = one(judge_load(window(hw_power_brake_slowdown=seconds)), "load.clock_event_durations", 0)
    assert check.status == status and words in check.reason, check.reason


def test_a_blip_passes_even_in_the_quick_profiles_short_window():
    check = one(judge_load(window(window_s=20.0, hw_thermal_slowdown=0.4)), "load.clock_event_durations", 0)
    assert check.status == "pass" and "(2 % of it): a blip of at most 0.5 s" in check.reason, check.reason


@pytest.mark.parametrize("seconds, status", [(0.5, "pass"), (1.2, "warn"), (7.0, "fail")])
def test_software_thermal_slowdown_warns_then_fails_by_its_share(seconds, status):
    assert one(judge_load(window(sw_thermal_slowdown=seconds)), "load.clock_event_durations", 0).status == status


def test_the_power_cap_at_the_limit_is_explained_with_its_seconds_and_passes():
    check = one(judge_load(window(sw_power_cap=48.0)), "load.clock_event_durations", 0)
    assert check.status == "pass"
    assert ("sw_power_cap for 48 s during the 60 s load window (80 % of it): the software power cap holding the GPU at "
            "its power limit, expected under a full matmul load") in check.reason
    assert "hw_slowdown" not in check.reason  # no counter exists for it: not listed as missing among the judged


def test_a_counter_not_supported_is_said_and_the_others_still_judged():
    check = one(judge_load(window(hw_power_brake_slowdown=None, hw_thermal_slowdown=12.0)), "load.clock_event_durations", 0)
    assert check.status == "fail" and "not read: hw_power_brake_slowdown (nvmlDeviceGetFieldValues" in check.reason


def test_no_counter_at_all_skips_and_an_unread_window_says_why():
    none = window(hw_power_brake_slowdown=None, hw_thermal_slowdown=None, sw_thermal_slowdown=None)
    check = one(judge_load(none), "load.clock_event_durations", 0)
    assert check.status == "skip" and "no slowdown duration counter could be read" in check.reason
    unread = {"unavailable": "this nvidia-ml-py lacks nvmlDeviceGetFieldValues"}
    check = one(judge_load(unread), "load.clock_event_durations", 0)
    assert check.status == "error" and "could not be read: this nvidia-ml-py lacks" in check.reason
    check = one(judge_load({"unavailable": NOT_SUPPORTED}), "load.clock_event_durations", 0)
    assert check.status == "skip"


def test_a_result_from_before_the_counters_skips_with_why():
    envelope = recorded("load")
    hosts = {"rig": {"envelopes": {"health": health_ok(), "load": envelope}, "reached": True, "reason": "", "groups": [],
                     "rule_overrides": RIG_OVERRIDES}}
    verdict = judge_fleet("run6", hosts, baselines(), rules()).hosts["rig"]
    for check_id in ("load.clock_event_durations", "health.clock_event_durations"):
        check = one(verdict, check_id, 0)
        assert check.status == "skip" and "holds no clock-event duration counters" in check.reason


def since_load(uptime_s=7200.0, **seconds):
    found = window(**seconds)
    reasons = found["reasons"]
    for entry in reasons.values():
        entry.pop("share_pct", None)
    return {"since": "driver_load", "uptime_s": uptime_s, "reasons": reasons,
            "violation_status": {policy: _entry(0.0) for policy in POLICIES}}


def judge_health(value):
    envelope = health_ok()
    for gpu in envelope["data"]["gpus"]:
        gpu["clock_event_durations"] = value
    return judge_one(envelope)


def test_hw_slowdown_since_the_driver_loaded_warns_with_its_share_of_uptime_and_never_fails():
    verdict = judge_health(since_load(hw_thermal_slowdown=3600.0, sw_power_cap=120.0))
    check = one(verdict, "health.clock_event_durations", 0)
    assert check.status == "warn" and check.value == 3600.0
    assert ("hw_thermal_slowdown for 3600 s since the driver loaded (at least 50 % of the host's 2 h uptime)"
            in check.reason), check.reason
    assert "context, not a failure" in check.reason and "sw_power_cap 120 s" in check.reason


def test_no_hw_slowdown_since_the_driver_loaded_passes_and_unread_counters_skip():
    check = one(judge_health(since_load()), "health.clock_event_durations", 0)
    assert check.status == "pass" and "no hardware slowdown time since the driver loaded (hw_thermal_slowdown 0 s" in check.reason
    overrides = dict(RIG_OVERRIDES, **{"health.clock_event_durations": {"params": {"warn_above_s": 10.0}}})
    envelope = health_ok()
    for gpu in envelope["data"]["gpus"]:
        gpu["clock_event_durations"] = since_load(hw_thermal_slowdown=5.0)
    check = one(judge_one(envelope, overrides=overrides), "health.clock_event_durations", 0)
    assert check.status == "pass" and "hardware slowdown time within 10 s since the driver loaded" in check.reason
    none = since_load(hw_power_brake_slowdown=None, hw_thermal_slowdown=None)
    check = one(judge_health(none), "health.clock_event_durations", 0)
    assert check.status == "skip" and "not supported by this GPU" in check.reason
