"""The contracts every probe shares, pinned to their one definition: the envelope's statuses on both sides of the wire,
and what each probe must have to be a probe of this collection (a schema, a time limit, a way to run, a dossier view,
a doc page, rules or a stated reason to judge nothing)."""
import glob
import json
import os
import re

import pytest
import yaml

from ansible_collections.gpufleet.validation.plugins.module_utils.envelope_statuses import (
    ENVELOPE_STATUSES,
    MEASURED_STATUSES,
    PROBE_STATUSES,
)
from ansible_collections.gpufleet.validation.plugins.plugin_utils.probe_kit.registry import declarations, judging_of, profiles
from ansible_collections.gpufleet.validation.plugins.plugin_utils.report.host_pages import PROBE_SECTIONS
from probelib import runner

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
PROBES = sorted(os.path.basename(path)[:-len(".py")] for path in glob.glob(os.path.join(ROOT, "probes", "*.py")))


def load_yaml(*parts):
    with open(os.path.join(ROOT, *parts), encoding="utf-8") as handle:
        return yaml.safe_load(handle)


def envelope_schema_statuses():
    with open(os.path.join(ROOT, "schemas", "envelope.schema.json"), encoding="utf-8") as handle:
        return tuple(json.load(handle)["properties"]["status"]["enum"])


def test_the_statuses_are_the_envelope_schemas_on_both_sides():
    assert sorted(ENVELOPE_STATUSES) == sorted(envelope_schema_statuses())
    assert sorted(PROBE_STATUSES) == sorted(set(envelope_schema_statuses()) - {"unreachable"})
    assert runner.STATUSES == PROBE_STATUSES  # the probes' copy: they run on hosts without the collection
    assert set(MEASURED_STATUSES) <= set(PROBE_STATUSES)


def test_every_probe_script_has_a_controller_package_and_every_package_a_script():
    # no list of the probes anywhere: discovery pairs probes/<name>.py with plugins/plugin_utils/probes/<name>/
    packages = sorted(entry for entry in os.listdir(os.path.join(ROOT, "plugins", "plugin_utils", "probes"))
                      if os.path.isfile(os.path.join(ROOT, "plugins", "plugin_utils", "probes", entry, "run.py")))
    assert PROBES and packages == PROBES == sorted(declarations())


@pytest.mark.parametrize("probe", PROBES)
def test_every_probe_has_a_schema_a_time_limit_a_way_to_run_a_view_a_doc_page_and_rules(probe):
    assert os.path.isfile(os.path.join(ROOT, "schemas", probe + ".schema.json"))
    assert os.path.isdir(os.path.join(ROOT, "probes", "probe_packages", probe)) or probe == "collective_hosts"
    declared = declarations()[probe]
    assert isinstance(declared.timeout_s, int) and declared.timeout_s >= 1, probe
    if declared.own_playbook:
        assert os.path.isfile(os.path.join(ROOT, declared.own_playbook))
        assert not declared.profiles, probe
        # its role's own default time limit is the one it declares
        assert "default(%d)" % declared.timeout_s in load_yaml("roles", probe, "defaults", "main.yml")["%s_timeout" % probe]
    else:
        assert any(probe in probes for probes in profiles().values()), probe
    assert probe in PROBE_SECTIONS
    titles = {}
    for path in glob.glob(os.path.join(ROOT, "docs", "*.md")):
        with open(path, encoding="utf-8") as handle:
            titles[os.path.basename(path)] = handle.readline()
    assert [name for name, title in titles.items() if probe in re.findall(r"[a-z0-9_]+", title)], probe
    own = os.path.join(ROOT, "plugins", "plugin_utils", "probes", probe, "rules.yaml")
    rules = load_yaml(own)["rules"] if os.path.isfile(own) else []
    assert bool(rules) != bool(declared.judges_nothing), (probe, [rule["id"] for rule in rules])
    judging = judging_of(probe)
    assert bool(judging is not None and judging.checks) == bool(rules), probe


def _shipped_rules():
    with open(os.path.join(ROOT, "docs", "rules.yaml"), encoding="utf-8") as handle:
        return {rule["id"]: rule for rule in yaml.safe_load(handle)["rules"]}


def _datasheet_keys():
    keys = set()
    for path in glob.glob(os.path.join(ROOT, "baselines", "*.yaml")):
        with open(path, encoding="utf-8") as handle:
            keys.update((yaml.safe_load(handle).get("datasheet") or {}).keys())
    return keys


@pytest.mark.parametrize("probe", PROBES)
def test_every_headline_names_a_fail_rule_of_its_probe_and_a_datasheet_key_some_sku_has(probe):
    """Issue 44: what a profile promises is its probes' headlines; a headline whose rule is missing, another probe's, or
    only a warning could never be proven (or would fail nothing), and a needs_datasheet key no baseline knows would
    never be promised."""
    rules, datasheet_keys = _shipped_rules(), _datasheet_keys()
    for headline in declarations()[probe].headlines:
        rule = rules.get(headline.rule)
        assert rule is not None, "%s's headline %s is no rule of docs/rules.yaml" % (probe, headline.rule)
        assert rule["probe"] == probe and rule["severity"] == "fail", (headline.rule, rule["probe"], rule["severity"])
        assert not headline.needs_datasheet or headline.needs_datasheet in datasheet_keys, headline


def test_the_acceptance_profile_promises_what_issue_44_says_a_pass_proves():
    promised = {headline.rule for probe in profiles()["acceptance"] for headline in declarations()[probe].headlines}
    assert promised >= {"membw.bandwidth", "gemm.bf16_burst", "gemm.bf16_sustained", "gemm.fp8_burst", "gemm.fp8_sustained",
                        "hostbw.pinned_h2d", "hostbw.pinned_d2h", "memtest.errors", "gemm.correctness", "load.correctness",
                        "p2p.unidirectional", "p2p.bidirectional", "collective.busbw"}
