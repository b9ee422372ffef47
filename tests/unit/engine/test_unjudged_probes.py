"""Issue 44, point 6: rules that leave a probe of a host's profile with no enabled rule are refused before anything runs,
naming the host, the probe and the variable; a rules file with no rule is refused too."""
import copy
import os

import pytest
import yaml

from ansible_collections.gpufleet.validation.plugins.plugin_utils.probe_kit.registry import declarations, profiles
from ansible_collections.gpufleet.validation.plugins.plugin_utils.rules_and_baselines import load_rules
from ansible_collections.gpufleet.validation.plugins.plugin_utils.run_variables_check import controller_problems, unjudged_problems
from ansible_collections.gpufleet.validation.plugins.plugin_utils.unjudged_probes import unjudged_probe_problems

SHIPPED = load_rules()
MEMBW_RULES = sorted(rule["id"] for rule in SHIPPED["rules"] if rule["probe"] == "membw")
MEMBW_OFF = {rule_id: {"enabled": False} for rule_id in MEMBW_RULES}


def _problems(hosts, rules=None, variable="gpufleet_rules_file", path=None):
    return unjudged_probe_problems(hosts, rules, SHIPPED, variable, path)


def test_the_shipped_rules_leave_no_probe_of_any_profile_unjudged():
    assert _problems({"n%d" % number: {"gpufleet_profile": name} for number, name in enumerate(profiles())}) == []


def test_an_override_disabling_every_rule_of_a_probe_of_the_profile_is_refused_naming_host_probe_and_variable():
    hosts = {"node-a": {"gpufleet_profile": "quick", "gpufleet_rule_overrides": MEMBW_OFF}, "node-b": {"gpufleet_profile": "quick"}}
    (problem,) = _problems(hosts)
    assert problem.startswith("node-a: gpufleet_rule_overrides leaves probe membw of profile quick with no enabled rule "
                              "(it disables %s)" % ", ".join(MEMBW_RULES)), problem


def test_the_default_profile_is_quick_and_a_probe_outside_the_profile_may_lose_its_rules():
    assert _problems({"node-a": {"gpufleet_rule_overrides": MEMBW_OFF}})[0].startswith("node-a: gpufleet_rule_overrides leaves probe membw")
    assert _problems({"node-a": {"gpufleet_profile": "health", "gpufleet_rule_overrides": MEMBW_OFF}}) == []


def test_a_downgrade_to_warn_or_one_rule_left_enabled_still_judges():
    warned = {rule_id: {"severity": "warn"} for rule_id in MEMBW_RULES}
    one_left = dict(MEMBW_OFF, **{MEMBW_RULES[0]: {"enabled": True}})
    assert _problems({"a": {"gpufleet_rule_overrides": warned}, "b": {"gpufleet_rule_overrides": one_left}}) == []


def test_every_rule_disabled_refuses_every_probe_of_the_hosts_custom_profile():
    off = {rule["id"]: {"enabled": False} for rule in SHIPPED["rules"]}
    hosts = {"node-a": {"gpufleet_profile": "mine", "gpufleet_profiles": {"mine": ["health", "gemm"]}, "gpufleet_rule_overrides": off}}
    found = _problems(hosts)
    assert [problem.split(" with no enabled rule")[0] for problem in found] == [
        "node-a: gpufleet_rule_overrides leaves probe health of profile mine", "node-a: gpufleet_rule_overrides leaves probe gemm of profile mine"]


def test_a_probe_that_judges_nothing_by_declaration_is_exempt():
    exempt = sorted(name for name, found in declarations().items() if found.judges_nothing)
    assert exempt, "a probe that judges nothing by declaration"
    mine = copy.deepcopy(SHIPPED)
    mine["rules"].append({"id": "%s.anything" % exempt[0], "probe": exempt[0], "check": "anything", "severity": "fail",
                          "description": "a shipped rule of an exempt probe"})
    hosts = {"node-a": {"gpufleet_profile": "mine", "gpufleet_profiles": {"mine": [exempt[0]]},
                        "gpufleet_rule_overrides": {"%s.anything" % exempt[0]: {"enabled": False}}}}
    assert unjudged_probe_problems(hosts, mine, mine, "gpufleet_rules_file", None) == []


def test_a_rules_file_without_a_probes_rules_is_refused_once_naming_the_file_its_hosts_and_the_missing_rules():
    mine = copy.deepcopy(SHIPPED)
    mine["rules"] = [rule for rule in mine["rules"] if rule["probe"] != "membw" or rule["id"] == MEMBW_RULES[0]]
    for rule in mine["rules"]:
        if rule["id"] == MEMBW_RULES[0]:
            rule["enabled"] = False
    hosts = {"node-a": {}, "node-b": {"gpufleet_profile": "quick"}, "node-c": {"gpufleet_profile": "health"}}
    (problem,) = _problems(hosts, mine, "report_rules_file", "/etc/gpufleet/mine.yaml")
    assert problem.startswith("report_rules_file /etc/gpufleet/mine.yaml leaves probe membw of profile quick with no enabled rule "
                              "for host(s) node-a, node-b (the shipped rules of membw: %s missing from it; %s disabled in it)"
                              % (", ".join(MEMBW_RULES[1:]), MEMBW_RULES[0])), problem


def test_an_override_can_restore_a_probe_the_rules_file_disabled():
    mine = copy.deepcopy(SHIPPED)
    for rule in mine["rules"]:
        if rule["probe"] == "membw":
            rule["enabled"] = False
    hosts = {"node-a": {"gpufleet_rule_overrides": {MEMBW_RULES[0]: {"enabled": True}}}, "node-b": {}}
    (problem,) = _problems(hosts, mine, path="mine.yaml")
    assert "no enabled rule for host(s) node-b (" in problem


def test_the_input_check_names_the_rules_file_variable_it_read(tmp_path):
    path = tmp_path / "rules.yaml"
    mine = copy.deepcopy(SHIPPED)
    mine["rules"] = [rule for rule in mine["rules"] if rule["probe"] != "health"]
    path.write_text(yaml.safe_dump(mine))
    values = {"gpufleet_rules_file": str(path)}
    problems, _warnings, rules = controller_problems(values)
    assert problems == []
    (problem,) = unjudged_problems(values, {"node-a": {"gpufleet_profile": "health"}}, rules)
    assert problem.startswith("gpufleet_rules_file %s leaves probe health of profile health with no enabled rule for host(s) node-a"
                              % path), problem


@pytest.mark.parametrize("text", ["rules: []\n", "judge_checks: []\nrules: []\n"])
def test_a_rules_file_with_no_rule_is_refused(tmp_path, text):
    path = tmp_path / "empty.yaml"
    path.write_text(text)
    with pytest.raises(ValueError, match=r"has no rule \(rules: \[\]\): a rules file without any judges nothing"):
        load_rules(str(path))
    problems, _warnings, rules = controller_problems({"gpufleet_rules_file": str(path)})
    assert rules is None and problems == ["gpufleet_rules_file: %s has no rule (rules: []): a rules file without any judges nothing, "
                                          "so every host would pass unchecked; give at least one rule (docs/rules.yaml lists "
                                          "the collection's)" % os.path.join(str(tmp_path), "empty.yaml")]
