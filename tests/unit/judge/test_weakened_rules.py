"""Issue 44, point 6: the shipped rules a run turned off or weakened, by a rules file or by overrides, with their hosts
and groups (judge/weakened_rules.py), so that the index, fleet.json and the console can name them."""
from __future__ import annotations

import copy

from ansible_collections.gpufleet.validation.plugins.plugin_utils.judge.weakened_rules import (
    weakened_lines,
    weakened_on,
    weakened_rules,
    weakened_sentence,
)
from helpers import rules

RACKS = {"n1": ["rack_a"], "n2": ["rack_a"], "n3": ["rack_b"]}


def _hosts(overrides):
    return {name: {"groups": groups, "rule_overrides": overrides.get(name) or {}} for name, groups in RACKS.items()}


def test_the_shipped_rules_as_shipped_weaken_nothing():
    assert weakened_rules(rules(), rules(), _hosts({})) == []


def test_a_rule_disabled_by_a_group_override_names_the_rule_its_hosts_and_the_group():
    off = {"membw.bandwidth": {"enabled": False}}
    (entry,) = weakened_rules(rules(), rules(), _hosts({"n1": off, "n2": off}))
    assert entry == {"rule": "membw.bandwidth", "probe": "membw", "change": "disabled", "how": "enabled: false",
                     "by": "gpufleet_rule_overrides", "hosts": ["n1", "n2"], "groups": ["rack_a"]}


def test_every_rule_disabled_on_every_host_names_every_rule_and_every_group():
    off = {rule["id"]: {"enabled": False} for rule in rules()["rules"]}
    found = weakened_rules(rules(), rules(), _hosts({name: off for name in RACKS}))
    assert sorted(entry["rule"] for entry in found) == sorted(rule["id"] for rule in rules()["rules"])
    assert all(entry["hosts"] == ["n1", "n2", "n3"] and entry["groups"] == ["rack_a", "rack_b"] for entry in found)


def test_a_fail_rule_downgraded_by_a_rules_file_names_the_file_and_a_warn_rule_is_not_downgraded():
    mine = copy.deepcopy(rules())
    for rule in mine["rules"]:
        if rule["id"] in ("membw.bandwidth", "membw.repeat_cv"):  # fail and warn as shipped
            rule["severity"] = "warn"
    found = weakened_rules(mine, rules(), _hosts({}), "rules file /etc/gpufleet/mine.yaml")
    assert found == [{"rule": "membw.bandwidth", "probe": "membw", "change": "downgraded",
                      "how": "severity warn where docs/rules.yaml says fail", "by": "rules file /etc/gpufleet/mine.yaml",
                      "hosts": ["n1", "n2", "n3"], "groups": ["rack_a", "rack_b"]}]


def test_a_rule_left_out_of_a_rules_file_is_disabled_by_it_and_a_host_override_can_restore_a_downgrade():
    mine = copy.deepcopy(rules())
    mine["rules"] = [rule for rule in mine["rules"] if rule["id"] != "health.cuda_init"]
    for rule in mine["rules"]:
        if rule["id"] == "health.device_majors":
            rule["severity"] = "warn"
    found = weakened_rules(mine, rules(), _hosts({"n3": {"health.device_majors": {"severity": "fail"}}}), "rules file r.yaml")
    assert [(entry["rule"], entry["change"], entry["how"], entry["hosts"], entry["groups"]) for entry in found] == [
        ("health.cuda_init", "disabled", "not in the rules file", ["n1", "n2", "n3"], ["rack_a", "rack_b"]),
        ("health.device_majors", "downgraded", "severity warn where docs/rules.yaml says fail", ["n1", "n2"], ["rack_a"])]


def test_what_is_weakened_on_one_host_is_read_by_rule_id():
    off = {"membw.bandwidth": {"enabled": False}}
    found = weakened_rules(rules(), rules(), _hosts({"n1": dict(off, **{"health.cuda_init": {"severity": "warn"}}), "n2": off}))
    assert {rule_id: entry["change"] for rule_id, entry in weakened_on(found, "n1").items()} == {
        "health.cuda_init": "downgraded", "membw.bandwidth": "disabled"}
    assert list(weakened_on(found, "n2")) == ["membw.bandwidth"] and weakened_on(found, "n3") == {}


def test_a_downgrade_by_an_override_stored_with_the_run_names_that_source():
    hosts = _hosts({"n1": {"health.cuda_init": {"severity": "warn"}}})
    hosts["n1"]["rule_override_sources"] = {"health.cuda_init": "gpufleet_rule_overrides stored with the run (n1/inputs.json)"}
    (entry,) = weakened_rules(rules(), rules(), hosts)
    assert entry["by"] == "gpufleet_rule_overrides stored with the run (n1/inputs.json)" and entry["hosts"] == ["n1"]
    assert entry["groups"] == []


def test_an_empty_rules_document_disables_every_shipped_rule():
    found = weakened_rules({"rules": []}, rules(), _hosts({}), "rules file empty.yaml")
    assert len(found) == len(rules()["rules"])
    assert {(entry["change"], entry["by"]) for entry in found} == {("disabled", "rules file empty.yaml")}


def test_broken_overrides_weaken_nothing_they_do_not_say():
    hosts = _hosts({"n1": {"health.nope": {"enabled": False}, "health.gpu_count": {"params": {"expected": "four"}}}})
    hosts["n2"]["rule_overrides"] = "not a mapping"
    assert weakened_rules(rules(), rules(), hosts) == []


def test_the_console_says_one_line_per_rule_bounded_in_lines_and_hosts():
    off = {"membw.bandwidth": {"enabled": False}}
    hosts = {"h%02d" % number: {"groups": ["all_racks"], "rule_overrides": off} for number in range(12)}
    (entry,) = weakened_rules(rules(), rules(), hosts)
    assert weakened_sentence(entry, 12) == ("membw.bandwidth disabled (enabled: false) by gpufleet_rule_overrides on 12 of 12 hosts "
                                            "(group all_racks): h00, h01, h02, h03, h04 (+7 more)")
    lines = weakened_lines([entry] * 25, 12)
    assert len(lines) == 21 and lines[0].startswith("rule weakened: membw.bandwidth disabled")
    assert lines[-1] == "rule weakened: 5 more, listed in the fleet index and fleet.json (weakened_rules)"
