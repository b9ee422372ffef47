"""Time comes from the controller (issue 45, point 2). The red team's rows: the host's clock a day ahead in the second
of two runs 15 s apart, with symbol_error 0 -> 1000, read as "24 h earlier" and a rate a day long, so the rise passed
(on a right clock it fails); a day behind, the counters "did not start before this run" and were skipped. The probe
action writes the controller's times into each envelope (plugin_utils/controller_clock.py), the rates are read on them,
and a host whose clock is off says so (host.clock_skew)."""
import copy
import datetime

import fabric_results as results
import helpers

from ansible_collections.gpufleet.validation.plugins.plugin_utils.controller_clock import controller_times, host_clock_ahead_s
from ansible_collections.gpufleet.validation.plugins.plugin_utils.judge.clock_skew import CHECK_ID, clock_skew_checks
from ansible_collections.gpufleet.validation.plugins.plugin_utils.result_fields import start_interval

T0 = datetime.datetime(2026, 12, 6, 3, 0, 0, tzinfo=datetime.timezone.utc)
DAY = datetime.timedelta(days=1)


def iso(moment):
    return moment.isoformat(timespec="seconds")


def on_clocks(envelope, controller, host, ahead):
    stamped = copy.deepcopy(envelope)
    stamped["started"] = iso(host)
    stamped["controller"] = {"started": iso(controller), "ended": iso(controller + datetime.timedelta(seconds=5)),
                             "host_clock_ahead_s": ahead}
    return stamped


def judge(earlier, now):
    hosts = {"rig": {"envelopes": {"health": helpers.health_ok(), "fabric": now}, "reached": True, "reason": "",
                     "groups": [], "rule_overrides": helpers.RIG_OVERRIDES}}
    return helpers.judge_fleet("R2", hosts, helpers.baselines(), helpers.rules(),
                               previous={"rig": {"health": helpers.health_ok(), "fabric": earlier}}).hosts["rig"]


def test_a_host_clock_a_day_ahead_or_behind_does_not_stretch_a_rate():
    earlier, now = results.symbol_errors_rising()
    for skew in (DAY, -DAY):
        later = T0 + datetime.timedelta(seconds=15)
        verdict = judge(on_clocks(earlier, T0, T0, 0.0), on_clocks(now, later, later + skew, skew.total_seconds()))
        failed = [check for check in helpers.checks_of(verdict, "fabric.symbol_error_rate") if check.status == "fail"]
        assert failed and all("0.00417 h earlier" in check.reason for check in failed), [check.reason for check in failed]
        skewed = helpers.one(verdict, CHECK_ID)
        assert skewed.status == "warn" and ("ahead of" if skew > datetime.timedelta(0) else "behind") in skewed.reason


def test_the_controller_s_clock_is_used_only_where_both_runs_record_it():
    earlier, now = {"started": iso(T0)}, {"started": iso(T0 + DAY), "controller": {"started": iso(T0 + datetime.timedelta(seconds=15))}}
    assert start_interval(earlier, now) == (DAY.total_seconds(), "host")
    earlier["controller"] = {"started": iso(T0)}
    assert start_interval(earlier, now) == (15.0, "controller")
    assert start_interval({}, now) == (None, "host")


def test_the_host_s_start_outside_the_controller_s_window_is_its_clock_being_off():
    start, answer = T0.timestamp(), T0.timestamp() + 5
    assert host_clock_ahead_s(iso(T0 + datetime.timedelta(seconds=3)), start, answer) == 0.0
    assert host_clock_ahead_s(iso(T0 - datetime.timedelta(seconds=1)), start, answer) == 0.0  # whole seconds
    assert host_clock_ahead_s(iso(T0 + DAY), start, answer) == DAY.total_seconds() - 5
    assert host_clock_ahead_s(iso(T0 - datetime.timedelta(seconds=40)), start, answer) == -40.0
    assert host_clock_ahead_s("not a time", start, answer) is None
    times = controller_times(start, answer, answer + 60, iso(T0 + datetime.timedelta(seconds=2)))
    assert times == {"started": "2026-12-06T03:00:00+00:00", "ended": "2026-12-06T03:01:05+00:00", "host_clock_ahead_s": 0.0}


def test_a_skew_within_the_limit_is_no_finding():
    assert clock_skew_checks("h", {"health": {"controller": {"host_clock_ahead_s": 4.0}}, "membw": {}}) == []
    (check,) = clock_skew_checks("h", {"health": {"controller": {"host_clock_ahead_s": 4.0}},
                                       "membw": {"controller": {"host_clock_ahead_s": -86400.0}}})
    assert check.probe == "membw" and check.value == -86400.0 and "86400 s behind the controller's" in check.reason
