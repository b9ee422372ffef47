"""Baselines, rules and overrides are bounded inputs: no NaN or infinity, no YAML aliases, at most 1 MiB."""
from __future__ import annotations

import os
import shutil

import pytest

from ansible_collections.gpufleet.validation.plugins.plugin_utils.judge.rules import effective_rules
from ansible_collections.gpufleet.validation.plugins.plugin_utils.rules_and_baselines import (
    load_baselines, load_rules, load_yaml, validate_overrides)
from ansible_collections.gpufleet.validation.plugins.plugin_utils.safe_yaml import MAX_INPUT_BYTES
from ansible_collections.gpufleet.validation.plugins.plugin_utils.store.schemas import schema_validator
from helpers import ROOT, rules

# Nine levels of nine aliases: 9**9 (387 million) strings once expanded, from 1 KB of text.
ALIAS_BOMB = "a: &a [\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\"]\n" + "".join(
    "%s: &%s [*%s,*%s,*%s,*%s,*%s,*%s,*%s,*%s,*%s]\n" % ((chr(ord("a") + level),) * 2 + (chr(ord("a") + level - 1),) * 9)
    for level in range(1, 9))


SHIPPED = [os.path.splitext(name)[0] for name in os.listdir(os.path.join(ROOT, "baselines")) if name.endswith(".yaml")]


@pytest.fixture
def baselines_copy(tmp_path):
    directory = tmp_path / "baselines"
    shutil.copytree(os.path.join(ROOT, "baselines"), directory)
    return directory


def _with_h200_value(directory, old, new):
    path = directory / "h200-sxm.yaml"
    text = path.read_text()
    assert old in text
    path.write_text(text.replace(old, new, 1))


@pytest.mark.parametrize("written,shown", [(".nan", "nan"), (".inf", "inf"), ("-.inf", "-inf")])
def test_a_baseline_with_nan_or_infinity_is_refused_naming_the_field(baselines_copy, written, shown):
    _with_h200_value(baselines_copy, "value: 4800", "value: %s" % written)
    loaded, problems = load_baselines(str(baselines_copy))
    assert sorted(baseline["id"] for baseline in loaded) == sorted(set(SHIPPED) - {"h200-sxm"})
    assert problems == ["%s skipped: baseline.datasheet.hbm_bandwidth.value is %s; it must be a "
                        "finite number" % (baselines_copy / "h200-sxm.yaml", shown)]


def test_the_schemas_refuse_infinity_anywhere_in_a_document():
    document = load_yaml(os.path.join(ROOT, "baselines", "h200-sxm.yaml"))
    document["known_good"]["nvbandwidth_d2d_h2d_ce"] = dict(document["known_good"]["nvbandwidth_h2d_ce"], value=float("inf"))
    for name, instance in (("baseline", document),
                           ("rules", {"rules": [dict(rules()["rules"][0], params={"expected": float("-inf")})]}),
                           ("rule_overrides", {"health.gpu_count": {"params": {"expected": float("inf")}}})):
        messages = [error.message for error in schema_validator(name + ".schema.json").iter_errors(instance)]
        assert any("inf is " in message for message in messages), (name, messages)


def test_a_rules_file_with_a_nan_param_is_refused_naming_the_field(tmp_path):
    text = open(os.path.join(ROOT, "docs", "rules.yaml"), encoding="utf-8").read()
    assert "max_cv_pct: 5.0" in text
    path = tmp_path / "rules.yaml"
    path.write_text(text.replace("max_cv_pct: 5.0", "max_cv_pct: .nan", 1))
    with pytest.raises(ValueError, match=r"rules\.rules\[\d+\]\.params\.max_cv_pct is nan; it must be a finite number"):
        load_rules(str(path))


def test_rule_overrides_with_nan_or_infinity_are_refused_by_the_checker_and_the_judge():
    overrides = {"health.gpu_count": {"params": {"expected": float("nan")}}}
    assert validate_overrides(overrides, rules()) == [
        "rule_overrides.health.gpu_count.params.expected is nan; it must be a finite number"]
    host_rules, problems = effective_rules(rules(), {"health.gpu_count": {"params": {"expected": float("inf")}}})
    assert any("param expected must be finite, not inf" in problem for problem in problems), problems
    assert next(rule for rule in host_rules if rule["id"] == "health.gpu_count")["params"]["expected"] is None


def test_a_yaml_alias_bomb_in_a_baseline_is_refused_at_its_first_anchor_before_anything_expands(baselines_copy):
    # Refused at the anchor on line 1, so no alias is ever resolved; an expanding loader would need gigabytes here.
    # (No wall-clock bound: speed lives in benchmarks, and a timed assert failed once on a loaded 2-core machine.)
    (baselines_copy / "bomb.yaml").write_text(ALIAS_BOMB)
    loaded, problems = load_baselines(str(baselines_copy))
    assert len(loaded) == len(SHIPPED)
    assert len(problems) == 1 and problems[0].startswith("{0} skipped: {0} is not valid YAML: ".format(baselines_copy / "bomb.yaml"))
    assert "found the anchor &a: anchors and aliases are not allowed in this file" in problems[0]


def test_an_alias_alone_is_refused_in_a_rules_file(tmp_path):
    path = tmp_path / "rules.yaml"
    path.write_text("rules:\n  - *missing_anchor\n")
    with pytest.raises(ValueError, match=r"found the alias \*missing_anchor: anchors and aliases are not allowed"):
        load_rules(str(path))


def test_a_file_over_the_size_limit_is_refused_without_being_parsed(baselines_copy):
    (baselines_copy / "huge.yaml").write_text("# padding\n" * (MAX_INPUT_BYTES // 10 + 1))
    loaded, problems = load_baselines(str(baselines_copy))
    assert len(loaded) == len(SHIPPED)
    assert problems == [("{0} skipped: {0} is %d bytes, larger than the %d bytes (1 MiB) a baseline, rules or overrides file may "
                         "be".format(baselines_copy / "huge.yaml")) % (10 * (MAX_INPUT_BYTES // 10 + 1), MAX_INPUT_BYTES)]


def test_duplicate_keys_are_still_refused(tmp_path):
    path = tmp_path / "dup.yaml"
    path.write_text("a: 1\na: 2\n")
    with pytest.raises(ValueError, match="found duplicate key 'a'"):
        load_yaml(str(path))
