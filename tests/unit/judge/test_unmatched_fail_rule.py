"""A rule with severity fail whose field path matches nothing is not a pass (issue 32: a mistyped path in the user's
rules file let every host pass with rc 0 and a warn under "Rules that matched nothing"). A path the probe's schema
rules out stops the run's input check naming the rule; one the schema allows but no host's result holds fails every
host where the probe ran (rules.unmatched_fail_rule). Default rules on a healthy host trigger neither."""
from __future__ import annotations

import copy

import pytest
import yaml

from ansible_collections.gpufleet.validation.plugins.plugin_utils.rules_and_baselines import load_rules, validate_overrides
from ansible_collections.gpufleet.validation.plugins.plugin_utils.store.schema_paths import path_problem
from helpers import health_ok, judge_one, one, rules

TYPO = {"id": "health.mig_off_typo", "probe": "health", "check": "field_equals", "severity": "fail",
        "params": {"path": "gpus[].mig_mod.current", "expected": "disabled"}, "description": "MIG off, mistyped"}


def _rules_file(tmp_path, *extra):
    document = copy.deepcopy(rules())
    document["rules"].extend(copy.deepcopy(list(extra)))
    path = tmp_path / "rules.yaml"
    path.write_text(yaml.safe_dump(document))
    return str(path)


def test_a_path_the_schema_rules_out_stops_the_input_check_naming_the_rule(tmp_path):
    with pytest.raises(ValueError) as raised:
        load_rules(_rules_file(tmp_path, TYPO))
    message = str(raised.value)
    assert "rule health.mig_off_typo: params.path 'gpus[].mig_mod.current' names nothing the health probe writes" in message
    assert "the health data has no field mig_mod under gpus[]" in message and "mig_mode" in message


@pytest.mark.parametrize("path", ["gpus[].mig_mode.current", "software.driver_version", "gpus[].power.draw_w"])
def test_real_paths_are_accepted(path):
    assert path_problem("health", path) is None


def test_the_default_rules_load(tmp_path):
    assert load_rules(_rules_file(tmp_path))["rules"]


def test_an_override_with_a_mistyped_path_is_refused():
    problems = validate_overrides({"health.mig_disabled": {"params": {"path": "gpus[].mig_mode.curent"}}}, rules())
    assert problems == ["rule_overrides.health.mig_disabled.params.path 'gpus[].mig_mode.curent' names nothing the health probe "
                        "writes: the health data has no field curent under gpus[].mig_mode (did you mean current? there: current, pending, unavailable)"]


def _with(rule):
    document = copy.deepcopy(rules())
    document["rules"].append(copy.deepcopy(rule))
    return document


def test_a_fail_rule_whose_path_no_result_holds_fails_the_host_naming_the_rule():
    """A path the schema allows (an open part, or a field every host happens to lack) but no host's result holds."""
    health = health_ok()
    for gpu in health["data"]["gpus"]:
        del gpu["mig_mode"]  # every host lacks it: nothing for the rule to read anywhere
    verdict = judge_one(health, rule_document=_with(dict(TYPO, params={"path": "gpus[].mig_mode.current", "expected": "disabled"})))
    check = one(verdict, "rules.unmatched_fail_rule")
    assert check.status == "fail" and verdict.verdict == "fail"
    assert "rule health.mig_off_typo (severity fail) reads gpus[].mig_mode.current of the health data" in check.reason
    assert any(line.startswith("rules.unmatched_fail_rule:") for line in verdict.reasons)


def test_a_warn_rule_that_matches_nothing_stays_a_warn_in_the_list_and_the_host_passes():
    health = health_ok()
    for gpu in health["data"]["gpus"]:
        del gpu["mig_mode"]
    verdict = judge_one(health, rule_document=_with(dict(TYPO, severity="warn", params={"path": "gpus[].mig_mode.current",
                                                                                        "expected": "disabled"})))
    assert not [check for check in verdict.checks if check.id == "rules.unmatched_fail_rule"]
    assert {check.id: check.status for check in verdict.judgement.unmatched_rules}["health.mig_off_typo"] == "warn"


def test_default_rules_on_a_healthy_host_with_probes_that_did_not_run_fail_nothing():
    verdict = judge_one(health_ok())
    assert verdict.verdict == "pass", verdict.reasons
    assert not [check for check in verdict.checks if check.id == "rules.unmatched_fail_rule"]
