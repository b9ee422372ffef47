"""Issue 47: each probe's rules live in its package (plugin_utils/probes/<probe>/rules.yaml), read in the core's
probe_order, and docs/rules.yaml, the whole list operators read, is generated from them (tools/rules_list.py): this
test fails when the committed file differs from the packages."""
import os

import pytest
import yaml

from ansible_collections.gpufleet.validation.plugins.plugin_utils import rules_and_baselines
from ansible_collections.gpufleet.validation.plugins.plugin_utils.probe_kit.registry import declarations, rules_files
from ansible_collections.gpufleet.validation.plugins.plugin_utils.rules_and_baselines import load_rules, shipped_rules
from tool_module import load_tool

TOOL = load_tool("rules_list")
ROOT = TOOL.ROOT
CORE = os.path.join(ROOT, "rules", "core.yaml")


def _load(path):
    with open(path, encoding="utf-8") as handle:
        return yaml.safe_load(handle)


def _core():
    return _load(CORE)


def test_docs_rules_yaml_is_what_the_packages_hold():
    with open(TOOL.LISTED, encoding="utf-8") as handle:
        assert handle.read() == TOOL.listed(), "run python tools/rules_list.py"


def test_the_listed_file_is_a_rules_file_equal_to_the_rules_the_judge_reads():
    assert load_rules(TOOL.LISTED) == load_rules() == shipped_rules()


def test_the_judge_reads_the_probes_rules_in_the_cores_order_then_in_run_order_then_the_trend_checks():
    order = _core()["probe_order"]
    files = rules_files(order)
    assert [probe for probe, _path in files][:len(order)] == order, "rules/core.yaml's probe_order names a probe without rules.yaml"
    # then the trend checks' (rules/history.yaml), which read the run index, not a probe's result
    history = rules_and_baselines.rules_sources(order)[-1]
    assert history[0] == "history" and history[1].endswith(os.path.join("rules", "history.yaml"))
    assert [rule["probe"] for rule in shipped_rules()["rules"]] == [probe for probe, path in files + [history] for _rule in _load(path)["rules"]]
    read = [probe for probe, _path in rules_files(["memtest"])]
    assert read[0] == "memtest" and read[1:] == sorted(read[1:], key=lambda probe: (declarations()[probe].run_order, probe))


def _health_rules_file(tmp_path, monkeypatch, text):
    """The health probe's rules.yaml, as the loader finds it, holding text (no other probe's file is read)."""
    stray = tmp_path / "rules.yaml"
    stray.write_text(text, encoding="utf-8")
    monkeypatch.setattr(rules_and_baselines, "rules_files", lambda order: [("health", str(stray))])


@pytest.mark.parametrize("text, refusal", [
    ("rules:\n  - {id: membw.x, probe: membw, check: bandwidth, severity: warn, description: x}\n",
     "holds rules of another probe than health: membw.x"),
    ("titles: {}\nrules: []\n", "must hold one key, rules: the list of the health probe's rules"),
    ("rules:\n  - just words\n", "breaks schemas/rules.schema.json")])
def test_a_probes_rules_file_that_is_not_a_list_of_its_own_rules_is_refused(tmp_path, monkeypatch, text, refusal):
    _health_rules_file(tmp_path, monkeypatch, text)
    with pytest.raises(ValueError, match=refusal):
        load_rules()


def test_a_rule_edited_in_its_package_is_caught_until_the_list_is_rewritten(monkeypatch):
    listed = TOOL.listed()
    original = TOOL._rules_text  # pylint: disable=protected-access
    monkeypatch.setattr(TOOL, "_rules_text", lambda path: original(path).replace("max_cv_pct: 5.0", "max_cv_pct: 6.0"))
    assert "max_cv_pct: 5.0" in listed and TOOL.listed() != listed and TOOL.differs()
