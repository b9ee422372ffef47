"""A slow host is named (issue 45, point 5): one host of eight slept 40 s before each probe, the run waited (100 s
against 29 s), and nothing in the index or fleet.json named it. Probe durations are compared across the hosts of a
group like any fleet metric, with a floor that the seconds a probe wobbles from host to host never cross."""
import copy
import json
import os

from ansible_collections.gpufleet.validation.plugins.plugin_utils.judge.slow_probes import CHECK_ID, durations, slow_probes

from helpers import baselines, judge_fleet, rules

HERE = os.path.dirname(os.path.abspath(__file__))
FIXTURE = os.path.join(os.path.dirname(os.path.dirname(HERE)), "fixtures", "health_h200x2_ok_by_the_action.json")
HOSTS = ["node-%d" % index for index in range(8)]


def test_a_host_that_sleeps_before_each_probe_is_named_with_its_times():
    taken = {host: ("h200-sxm", {"health": 2.0 + 0.1 * index, "membw": 9.0 + 0.2 * index}) for index, host in enumerate(HOSTS)}
    taken["node-5"] = ("h200-sxm", {"health": 42.3, "membw": 49.8})
    found, checks = slow_probes(taken, 3)
    assert [(entry.probe, entry.hosts) for entry in found] == [
        ("health", [{"host": "node-5", "duration_s": 42.3, "over_s": 39.95}]),
        ("membw", [{"host": "node-5", "duration_s": 49.8, "over_s": 40.1}])]
    assert sorted(checks) == ["node-5"] and [check.id for check in checks["node-5"]] == [CHECK_ID, CHECK_ID]
    check = checks["node-5"][0]
    assert check.status == "warn" and check.value == 42.3 and check.reference == 2.35
    assert check.reason.startswith("probe health took 42.3 s on this host, 39.9 s longer than the median 2.3 s of the 8 hosts")


def test_the_seconds_a_probe_wobbles_are_no_slow_host():
    """A cold import or a busy controller: 2 s against 1 s (+100 %), or 30 s against 24 s (+6 s), is not slow."""
    taken = {host: ("g", {"health": 1.0, "gemm": 24.0}) for host in HOSTS}
    taken["node-1"] = ("g", {"health": 2.5, "gemm": 30.0})
    taken["node-2"] = ("g", {"health": 9.0, "gemm": 33.9})
    assert slow_probes(taken, 3) == ([], {})


def test_too_few_hosts_or_another_group_compare_nothing():
    taken = {"a": ("g1", {"health": 1.0}), "b": ("g1", {"health": 60.0}), "c": ("g2", {"health": 1.0}),
             "d": ("g2", {"health": 1.1}), "e": ("g2", {"health": 1.2})}
    assert slow_probes(taken, 3) == ([], {})


def test_durations_come_from_the_envelopes_that_say_them():
    assert durations({"health": {"duration_s": 2.5}, "membw": {"duration_s": None}, "x": "broken", "y": {"duration_s": True},
                      "z": {"duration_s": -1}}) == {"health": 2.5}


def test_the_fleet_judgement_names_the_slow_host_in_fleet_json_and_its_checks():
    with open(FIXTURE, encoding="utf-8") as handle:
        health = json.load(handle)
    document = {}
    for index, host in enumerate(HOSTS):
        envelope = copy.deepcopy(health)
        envelope["duration_s"] = 42.0 if host == "node-3" else 1.5 + 0.05 * index
        document[host] = {"envelopes": {"health": envelope}, "reached": True, "reason": "", "groups": [], "rule_overrides": {}}
    judgement = judge_fleet("R1", document, baselines(), rules())
    assert [entry["hosts"][0]["host"] for entry in judgement.slow_probes] == ["node-3"]
    assert judgement.to_dict()["slow_probes"][0]["probe"] == "health"
    slow = [check for check in judgement.hosts["node-3"].checks if check.id == CHECK_ID]
    assert len(slow) == 1 and slow[0].status == "warn"
    assert not any(check.id == CHECK_ID for host in HOSTS if host != "node-3" for check in judgement.hosts[host].checks)
