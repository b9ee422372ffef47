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
from ansible_collections.gpufleet.validation.plugins.plugin_utils.probes.registry import declarations, judging_of, profiles
from ansible_collections.gpufleet.validation.plugins.plugin_utils.report_render import PROBE_SECTIONS
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
    assert os.path.isdir(os.path.join(ROOT, "probes", "probelib", probe)) or probe == "collective_hosts"
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
    rules = [rule for rule in load_yaml("rules", "default.yaml")["rules"] if rule.get("probe") == probe]
    assert bool(rules) != bool(declared.judges_nothing), (probe, [rule["id"] for rule in rules])
    judging = judging_of(probe)
    assert bool(judging is not None and judging.checks) == bool(rules), probe
