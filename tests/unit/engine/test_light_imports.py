"""The probe action's per-host work imports only run metadata: no judge, no report, no probe's judging, view or metric
catalogue (issue 33). Measured in a fresh interpreter, as a forked Ansible worker starts with nothing of its own."""
import json
import os
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
PREFIX = "ansible_collections.gpufleet.validation.plugins."
PER_HOST = """
import importlib, json, sys
sys.path.insert(0, %r)
importlib.import_module("ansible_collections.gpufleet.validation.plugins.action.probe")
registry = importlib.import_module("ansible_collections.gpufleet.validation.plugins.plugin_utils.probe_kit.registry")
for probe in registry.declarations():
    registry.declaration(probe).timeout_s, registry.profile_params("acceptance", probe), registry.default_timeouts()
print(json.dumps(sorted(name for name in sys.modules if name.startswith(%r))))
"""
HEAVY = ("plugin_utils.judge", "plugin_utils.report.", "plugin_utils.rules_and_baselines",
         "plugin_utils.run_judgement", "plugin_utils.probe_kit.judging")


def loaded_by_the_probe_action():
    code = PER_HOST % (os.path.join(ROOT, "collections"), PREFIX)
    found = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=120)
    return [name[len(PREFIX):] for name in json.loads(found.stdout)]


def test_the_probe_action_loads_no_judge_report_or_probe_judging():
    loaded = loaded_by_the_probe_action()
    assert "plugin_utils.probes.membw.run" in loaded  # the test sees the declarations it claims to look at
    heavy = [name for name in loaded if name.startswith(HEAVY) or name.rsplit(".", 1)[-1] in ("judging", "view", "metrics", "checks")]
    assert heavy == []
