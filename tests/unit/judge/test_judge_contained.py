"""An earlier result that cannot be read is said on the drift checks that needed it; one host's exception stays its own."""
from __future__ import annotations

from ansible_collections.gpufleet.validation.plugins.plugin_utils.judge import host_judgement
from ansible_collections.gpufleet.validation.plugins.plugin_utils.probes.health import machine_drift
from helpers import RIG_OVERRIDES, as_machine, baselines, health_ok, judge_fleet, rules

PROBLEM = "previous run's health.json is unreadable: Expecting value: line 1 column 1 (char 0) (run 20261129T010000Z-1)"


def _hosts(*names):
    return {name: {"envelopes": {"health": as_machine(health_ok(), number) if number else health_ok()}, "reached": True, "reason": "", "groups": ["rack1"],
                   "rule_overrides": RIG_OVERRIDES} for number, name in enumerate(names)}


def _drift_checks(verdict):
    return [check for check in verdict.checks if check.id.startswith("drift.")]


def test_an_unreadable_previous_health_result_skips_every_drift_check_it_would_have_made_with_the_reason():
    compared = judge_fleet("run2", _hosts("rig"), baselines(), rules(), previous={"rig": {"health": health_ok()}},
                           previous_run_id="20261129T010000Z-1").hosts["rig"]
    unreadable = judge_fleet("run2", _hosts("rig"), baselines(), rules(), previous=None, previous_run_id="20261129T010000Z-1",
                             previous_problems={"rig": {"health": PROBLEM}}).hosts["rig"]
    expected = sorted((check.id, check.gpu_index) for check in _drift_checks(compared))
    assert len(expected) >= 10
    assert sorted((check.id, check.gpu_index) for check in _drift_checks(unreadable)) == expected
    assert {(check.status, check.reason) for check in _drift_checks(unreadable)} == {("skip", "not compared: " + PROBLEM)}
    assert unreadable.verdict == compared.verdict


def test_a_previous_health_result_whose_gpus_is_not_a_list_does_not_crash_the_judge():
    earlier = health_ok()
    earlier["data"] = {"gpus": "x"}
    verdict = judge_fleet("run2", _hosts("rig"), baselines(), rules(), previous={"rig": {"health": earlier}},
                          previous_run_id="r1").hosts["rig"]
    assert verdict.verdict != "error"
    gpus = [check for check in verdict.checks if check.id == "drift.gpus"]
    assert [(check.status, check.reason) for check in gpus] == [
        ("skip", "the GPU list is unavailable in this run or in run %s" % earlier["run_id"])]


def test_an_exception_while_comparing_with_the_previous_run_skips_drift_and_the_host_is_judged(monkeypatch):
    def broken(*unused):
        raise KeyError("index")
    monkeypatch.setattr(machine_drift, "device_major_drift", broken)
    verdict = judge_fleet("run2", _hosts("rig"), baselines(), rules(), previous={"rig": {"health": health_ok()}},
                          previous_run_id="r1").hosts["rig"]
    assert verdict.verdict in ("pass", "warn")
    assert [(check.status, check.reason) for check in verdict.checks if check.id == "drift.previous_run"] == [
        ("skip", "drift not compared with r1: comparing raised KeyError: 'index'")]


def test_an_exception_while_judging_one_host_makes_it_error_and_every_other_host_is_judged(monkeypatch):
    real = host_judgement.identify_host

    def identify(gpus, known, unavailable=None):
        if gpus and gpus[0].uuid == "GPU-broken":
            raise TypeError("unhashable type: 'dict'")
        return real(gpus, known, unavailable)
    monkeypatch.setattr(host_judgement, "identify_host", identify)
    hosts = _hosts("node-a", "node-b", "node-c")
    hosts["node-b"]["envelopes"]["health"]["data"]["gpus"][0]["uuid"] = "GPU-broken"
    judgement = judge_fleet("run2", hosts, baselines(), rules())
    broken = judgement.hosts["node-b"]
    assert broken.verdict == "error"
    assert broken.reasons == ["host.judged: judging this host raised TypeError: unhashable type: 'dict' (a judge bug or a "
                              "result no schema foresaw; the other hosts are judged)"]
    assert [check.id for check in broken.checks] == ["host.judged"]
    for name in ("node-a", "node-c"):
        assert judgement.hosts[name].verdict in ("pass", "warn"), judgement.hosts[name].reasons
        assert len(judgement.hosts[name].checks) > 20
