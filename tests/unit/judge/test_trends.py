"""The trend checks (issue 48 point 2, judge/trends.py): slow decay, a fault that returns, flapping, the slowest of its
group; each names the runs it used, and skips with too few."""
from __future__ import annotations

import random

import pytest

from ansible_collections.gpufleet.validation.plugins.plugin_utils.judge.history_model import EarlierRun, HostHistory
from ansible_collections.gpufleet.validation.plugins.plugin_utils.judge.metrics import Metric
from ansible_collections.gpufleet.validation.plugins.plugin_utils.judge.model import Check
from ansible_collections.gpufleet.validation.plugins.plugin_utils.judge.rules import effective_rules
from ansible_collections.gpufleet.validation.plugins.plugin_utils.judge.trends import (
    fit_slope, flapping, group_lowest, headline_specs, returning_fault, slow_decay, slowest_of_group)
from ansible_collections.gpufleet.validation.plugins.plugin_utils.probe_kit.registry import probe_catalogue
from ansible_collections.gpufleet.validation.plugins.plugin_utils.rules_and_baselines import shipped_rules

UUID = "GPU-00000001-0000-0000-0000-000000000000"
MEMBW = "membw.bandwidth_gbps"
NOW = "2026-12-15T01:00:00Z"


def rule(check):
    rules, problems = effective_rules([found for found in shipped_rules()["rules"] if found["check"] == check and found["probe"] == "history"])
    assert not problems and len(rules) == 1
    return rules[0]


def specs():
    return headline_specs(probe_catalogue().metric_specs)


def nightly(values, last_day=14):
    """HostHistory with one membw series on GPU 0: values oldest first, one a night up to the night before NOW."""
    runs, points = [], []
    for number, value in enumerate(values):
        day = last_day - len(values) + number
        run_id = "202612%02dT010000Z-r%02d" % (day, number)
        started = "2026-12-%02dT01:00:00Z" % day
        runs.append(EarlierRun(run_id, started, "pass"))
        points.append((started, value, run_id))
    return HostHistory(runs=list(reversed(runs)), series={(MEMBW, UUID): list(reversed(points))})


def membw(value):
    return [Metric(MEMBW, UUID, 0, value, "GB/s", "higher")]


def test_a_straight_line_is_fitted_exactly():
    slope = fit_slope([(day, 100.0 - 0.1 * day) for day in range(10)])
    assert slope.rate_pct == pytest.approx(-3.0 / 99.55 * 100, rel=1e-9) and slope.t_value > 1e6 and slope.count == 10
    assert fit_slope([(1.0, 5.0), (1.0, 6.0), (1.0, 7.0)]) is None   # one day: no slope


def test_a_slow_decay_warns_with_its_rate_its_runs_and_the_days_to_the_floor():
    noise = random.Random(3)
    values = [3050.0 * (1 - 0.0007 * day) * (1 + noise.gauss(0, 0.0005)) for day in range(14)]   # -2.1 % a month
    history = nightly(values[:-1])
    floors = {(MEMBW, UUID): (2593.0, "85 % of the known-good 3051 GB/s, rule membw.bandwidth")}
    found = slow_decay("h1", rule("slow_decay"), membw(values[-1]), specs(), history, NOW, floors)
    assert [check.status for check in found] == ["warn"]
    check = found[0]
    assert check.id == "history.slow_decay" and check.gpu_uuid == UUID and check.unit == "%"
    assert -2.4 < check.value < -1.8
    assert "Memory bandwidth -2" in check.reason and "over 14 runs, 20261201T010000Z-r00 to this run / 30 days" in check.reason
    assert "reaches the fail floor 2593 GB/s (85 % of the known-good 3051 GB/s, rule membw.bandwidth) in about" in check.reason
    assert "least-squares" in check.reference_source


def test_a_flat_noisy_gpu_passes_and_the_steepest_series_is_named():
    noise = random.Random(5)
    values = [3050.0 * (1 + noise.gauss(0, 0.004)) for unused in range(14)]
    found = slow_decay("h1", rule("slow_decay"), membw(values[-1]), specs(), nightly(values[:-1]), NOW, {})
    assert [check.status for check in found] == ["pass"]
    assert "1 headline series fitted over up to 14 runs: none declines 2 % or more per 30 days" in found[0].reason


def test_a_steep_fall_that_is_only_noise_does_not_warn():
    # the same rate as above, but with 1.5 % of noise a night: t stays under 4
    noise = random.Random(11)
    values = [3050.0 * (1 - 0.0007 * day) * (1 + noise.gauss(0, 0.015)) for day in range(14)]
    found = slow_decay("h1", rule("slow_decay"), membw(values[-1]), specs(), nightly(values[:-1]), NOW, {})
    assert found[0].status == "pass"


@pytest.mark.parametrize("values, words", [
    ([3050.0] * 4, "the headline series had 5 run(s) with this one"),
])
def test_too_few_runs_skip_and_say_how_many(values, words):
    found = slow_decay("h1", rule("slow_decay"), membw(3000.0), specs(), nightly(values), NOW, {})
    assert [check.status for check in found] == ["skip"] and words in found[0].reason


def test_runs_an_hour_apart_are_no_rate_per_month():
    runs = [EarlierRun("20261215T00%02d00Z-r" % minute, "2026-12-15T00:%02d:00Z" % minute, "pass") for minute in range(0, 52, 4)]
    series = {(MEMBW, UUID): [(run.started, 3050.0 - number * 10, run.run_id) for number, run in enumerate(runs)]}
    history = HostHistory(runs=list(reversed(runs)), series={key: list(reversed(points)) for key, points in series.items()})
    found = slow_decay("h1", rule("slow_decay"), membw(2900.0), specs(), history, NOW, {})
    assert found[0].status == "skip" and "less than 7 days" in found[0].reason


def test_no_headline_or_no_index_skips_with_why():
    assert "no headline metric" in slow_decay("h1", rule("slow_decay"), [], specs(), nightly([1.0] * 9), NOW, {})[0].reason
    found = slow_decay("h1", rule("slow_decay"), membw(1.0), specs(), HostHistory.unavailable("no run index at /r"), NOW, {})
    assert found[0].status == "skip" and "no run index at /r" in found[0].reason


def fault(check_id="membw.bandwidth"):
    return Check(id=check_id, host="h1", probe="membw", status="fail", reason="slow")


def runs_of(*verdicts, faults=None, resumed=()):
    """EarlierRuns oldest first as given (newest first in the HostHistory), one a day."""
    runs = []
    for number, verdict in enumerate(verdicts):
        run_id = "202612%02dT010000Z-r" % (number + 1)
        found = (faults or {}).get(number, ("membw.bandwidth",) if verdict == "fail" else ())
        runs.append(EarlierRun(run_id, "2026-12-%02dT01:00:00Z" % (number + 1), verdict, tuple(found), resumed=number in resumed))
    return HostHistory(runs=list(reversed(runs)))


def test_a_fault_back_twice_after_service_escalates_to_service():
    found = returning_fault("h1", rule("returning_fault"), [fault()], runs_of("fail", "pass", "pass", "fail", "pass"))
    assert [check.status for check in found] == ["fail"]
    assert "membw.bandwidth came back 2 times after the host was back in service (20261201T010000Z-r, 20261204T010000Z-r, and " \
           "this run): escalated to service required" in found[0].reason
    assert rule("returning_fault")["action"] == "service"


def test_a_fault_that_never_left_is_one_incident():
    found = returning_fault("h1", rule("returning_fault"), [fault()], runs_of("fail", "fail", "fail", "fail"))
    assert found[0].status == "pass" and "membw.bandwidth came back 0 times (2 escalate)" in found[0].reason


def test_a_resume_by_the_act_is_a_return_to_service():
    history = runs_of("fail", "fail", "fail", resumed=(0, 1))   # resumed after the first and the second run
    found = returning_fault("h1", rule("returning_fault"), [fault()], history)
    assert found[0].status == "fail" and "came back 2 times" in found[0].reason


def test_another_cause_or_no_fault_is_no_return():
    history = runs_of("fail", "pass", "fail", "pass", faults={2: ("health.xid_events",)})
    assert returning_fault("h1", rule("returning_fault"), [fault()], history)[0].status == "pass"
    assert "no fault in this run" in returning_fault("h1", rule("returning_fault"), [], history)[0].reason


def test_flapping_is_named_with_its_verdicts():
    history = runs_of(*(["pass", "warn"] * 4 + ["pass"]))
    found = flapping("h1", rule("flapping"), "warn", history)
    assert [check.status for check in found] == ["warn"] and found[0].value == 9
    assert "its verdict changed 9 times in the last 10 runs, 20261201T010000Z-r to this run (pass, warn, pass" in found[0].reason


def test_a_steady_host_or_one_repair_is_no_flapping():
    assert flapping("h1", rule("flapping"), "pass", runs_of(*(["pass"] * 9)))[0].status == "pass"
    assert flapping("h1", rule("flapping"), "pass", runs_of(*(["pass"] * 4 + ["fail"] * 3 + ["pass"] * 2)))[0].status == "pass"
    short = flapping("h1", rule("flapping"), "pass", runs_of("pass", "fail"))
    assert short[0].status == "skip" and "3 of the 10 runs needed" in short[0].reason


def samples(values):
    """(host, probe, group, metric) of one membw value per host, all in one group."""
    return [(host, "membw", "h100-sxm", Metric(MEMBW, "GPU-%s" % host, 0, value, "GB/s", "higher")) for host, value in values.items()]


def test_the_lowest_of_a_group_is_one_host_and_a_tie_is_nobody():
    lowest = group_lowest(samples({"a": 3000.0, "b": 3050.0, "c": 3049.0, "d": 3051.0}), specs())
    assert list(lowest) == ["a"] and lowest["a"][0].group_median == pytest.approx(3049.5) and lowest["a"][0].group_hosts == 4
    assert group_lowest(samples({"a": 3000.0, "b": 3000.0, "c": 3050.0}), specs()) == {}


def test_the_slowest_of_its_group_five_runs_running_is_named():
    lowest = group_lowest(samples({"a": 3000.0, "b": 3050.0, "c": 3049.0, "d": 3051.0}), specs())["a"]
    earlier = HostHistory(runs=[EarlierRun("r%d" % number, "2026-12-%02dT01:00:00Z" % (10 - number), "pass", lowest=(MEMBW,))
                                for number in range(4)])
    found = slowest_of_group("a", rule("slowest_of_group"), lowest, specs(), earlier)
    assert [check.status for check in found] == ["warn"]
    assert "the lowest of its group h100-sxm (4 hosts) on Memory bandwidth in 5 consecutive runs (5 runs, r3 to this run): " \
           "3000 GB/s, 1.6 % from the group's median 3050 GB/s" in found[0].reason
    broken = HostHistory(runs=earlier.runs[:2] + [EarlierRun("r9", "2026-12-01T01:00:00Z", "pass")] + earlier.runs[2:])
    assert slowest_of_group("a", rule("slowest_of_group"), lowest, specs(), broken)[0].status == "pass"


def test_a_small_group_or_a_small_gap_is_not_named():
    small = group_lowest(samples({"a": 3000.0, "b": 3050.0, "c": 3049.0}), specs())["a"]
    always = HostHistory(runs=[EarlierRun("r%d" % number, "2026-12-0%dT01:00:00Z" % (9 - number), "pass", lowest=(MEMBW,)) for number in range(4)])
    assert slowest_of_group("a", rule("slowest_of_group"), small, specs(), always)[0].status == "skip"
    close = group_lowest(samples({"a": 3045.0, "b": 3050.0, "c": 3049.0, "d": 3051.0}), specs())["a"]
    assert slowest_of_group("a", rule("slowest_of_group"), close, specs(), always)[0].status == "pass"


def test_runs_of_another_machine_under_the_name_are_not_counted():
    """The rig's recordings: one name, "localhost", on many VMs; a flip between machines is no flapping of one."""
    old = [EarlierRun("r%d" % number, "2026-12-%02dT01:00:00Z" % (number + 1), verdict, gpus=("GPU-old",))
           for number, verdict in enumerate(["pass", "fail"] * 3)]
    new = [EarlierRun("s%d" % number, "2026-12-%02dT01:00:00Z" % (number + 10), "pass", gpus=("GPU-new",)) for number in range(3)]
    history = HostHistory(runs=list(reversed(old + new)))
    found = flapping("h1", rule("flapping"), "pass", history, ("GPU-new",))
    assert found[0].status == "skip" and "changed 0 times in the last 4 runs, s0 to this run" in found[0].reason
    assert "(run r5 and those before it had other GPUs: another machine's, or this one's before a GPU swap)" in found[0].reason
    assert flapping("h1", rule("flapping"), "pass", history, ("GPU-old",))[0].reason.startswith("its verdict changed 0 times in the last 1 run")
