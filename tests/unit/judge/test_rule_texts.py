"""Every default rule has a short title, a remedy and an action; a user's rules file may omit them (issue 17)."""
from __future__ import annotations

import copy

import pytest

from ansible_collections.gpufleet.validation.plugins.plugin_utils.judge.rules import ACTIONS, CheckTexts
from ansible_collections.gpufleet.validation.plugins.plugin_utils.probe_kit.registry import metric_catalogue
from ansible_collections.gpufleet.validation.plugins.plugin_utils.rules_and_baselines import load_rules, rules_schema_problems


@pytest.fixture(scope="module")
def default_rules():
    return load_rules()


def test_every_default_rule_has_a_title_a_remedy_and_an_action(default_rules):
    missing = [(rule["id"], key) for rule in default_rules["rules"] for key in ("title", "remedy", "action")
               if not str(rule.get(key) or "").strip()]
    assert missing == []
    assert {rule["action"] for rule in default_rules["rules"]} <= set(ACTIONS)
    too_long = [rule["id"] for rule in default_rules["rules"] if len(rule["title"]) > 40]
    assert too_long == []


def test_every_judge_check_and_metric_of_the_examples_has_a_title(default_rules):
    texts = CheckTexts(default_rules, metric_titles={spec_id: spec.title for spec_id, spec in metric_catalogue().items()})
    for check_id in ("host.reachable", "host.gpu_measured", "host.nothing_checked", "health.probe_status", "fleet.settings",
                     "drift.gpus", "drift.previous_run"):
        text = texts.of(check_id)
        assert text.title and text.title != check_id and text.action in ACTIONS, check_id
    assert texts.of("fleet.health.cuda_init_s").title == "CUDA init time (compared with peers)"
    assert texts.of("drift.kernel_cmdline").title == "Kernel command line (since the previous run)"
    assert texts.of("p2p.probe_status").title == "p2p probe ran"
    assert texts.title_of("p2p.worst_pair_bidirectional_gbps") == "Slowest GPU pair, both ways"


def test_a_users_rules_file_without_titles_falls_back_to_the_description(default_rules):
    users = {"rules": [{"id": "health.ecc_enabled", "probe": "health", "check": "ecc_enabled", "severity": "fail",
                        "description": "ECC must be on."}]}
    assert rules_schema_problems(users) == []
    texts = CheckTexts(users, default_rules)
    assert texts.of("health.ecc_enabled").title == "ECC must be on."
    assert texts.of("health.ecc_enabled").remedy == "" and texts.of("health.ecc_enabled").action == ""
    # The judge's own checks keep the default file's words.
    assert texts.of("host.reachable").title == "Host reached"
    assert texts.of("no.such_check").title == "no: such check"


def test_a_bad_action_or_empty_title_is_a_problem(default_rules):
    broken = copy.deepcopy(default_rules)
    broken["rules"][0]["action"] = "panic"
    broken["rules"][1]["title"] = " "
    problems = rules_schema_problems(broken)
    first, second = broken["rules"][0]["id"], broken["rules"][1]["id"]
    assert problems == ["rule %s: action: 'panic' is not one of ['service', 'drain', 'reboot', 'reseat_rma', 'fix_config', 'check_inventory', "
                        "'rerun', 'rerun_when_idle', 'none']" % first,
                        "rule %s: title: ' ' does not match '\\\\S'" % second]


def test_the_schema_rejects_an_unknown_action(tmp_path, default_rules):
    import yaml
    broken = copy.deepcopy(default_rules)
    broken["rules"][0]["action"] = "panic"
    path = tmp_path / "rules.yaml"
    path.write_text(yaml.safe_dump(broken))
    with pytest.raises(ValueError, match="breaks schemas/rules.schema.json"):
        load_rules(str(path))
