"""Issue 44, point 6, through the real `ansible-playbook validate.yml` on this machine (health profile, no CUDA init):
a rules file with no rule, or a group variable disabling every rule, is refused before anything runs; a rule that a
group's override downgrades is named in the console summary and in fleet.json."""
import json
import os
import sys

import yaml

from test_bad_input import HEALTH_ONLY, NO_CUDA_INIT, REFUSED, REPORT_ONLY, assert_refused_before_anything_ran  # pylint: disable=import-error
from test_validate_playbook import ROOT, only_run_dir, run_playbook  # pylint: disable=import-error


def _rack_inventory(path, rack_vars):
    """This machine as the one host of group rack_a, whose variables are rack_vars."""
    path.write_text(yaml.safe_dump({"all": {
        "vars": {"ansible_connection": "local", "ansible_python_interpreter": sys.executable, "probe_params": NO_CUDA_INIT},
        "children": {"rack_a": {"hosts": {"localhost": {}}, "vars": rack_vars}}}}))
    return str(path)


def test_a_rules_file_with_no_rule_is_refused_and_nothing_is_probed(tmp_path):
    rules_file = tmp_path / "empty-rules.yaml"
    rules_file.write_text("rules: []\n")
    results = tmp_path / "results"
    code, output = run_playbook(results, *HEALTH_ONLY, "-e", "gpufleet_rules_file=%s" % rules_file)
    assert_refused_before_anything_ran(code, output, results, "gpufleet_rules_file: %s has no rule (rules: [])" % rules_file)


def test_a_group_variable_disabling_every_rule_is_refused_naming_the_host_the_probe_and_the_variable(tmp_path):
    with open(os.path.join(ROOT, "docs", "rules.yaml"), encoding="utf-8") as handle:
        every_rule = [rule["id"] for rule in yaml.safe_load(handle)["rules"]]
    inventory = _rack_inventory(tmp_path / "inventory.yml",
                                {"gpufleet_rule_overrides": {rule_id: {"enabled": False} for rule_id in every_rule}})
    results = tmp_path / "results"
    code, output = run_playbook(results, "-i", inventory, *HEALTH_ONLY)
    assert_refused_before_anything_ran(code, output, results, "1 " + REFUSED,
                                       "localhost: gpufleet_rule_overrides leaves probe health of profile health with no enabled rule")


def test_a_rule_downgraded_by_a_group_override_is_named_in_the_console_and_in_fleet_json(tmp_path):
    inventory = _rack_inventory(tmp_path / "inventory.yml", {"gpufleet_rule_overrides": {"health.device_majors": {"severity": "warn"}}})
    results = tmp_path / "results"
    code, output = run_playbook(results, "-i", inventory, *HEALTH_ONLY, *REPORT_ONLY)
    assert code == 0, output
    assert ("rule weakened: health.device_majors downgraded (severity warn where docs/rules.yaml says fail) by "
            "gpufleet_rule_overrides on 1 of 1 host (group rack_a): localhost") in output, output
    with open(os.path.join(only_run_dir(results), "fleet.json"), encoding="utf-8") as handle:
        fleet = json.load(handle)
    assert fleet["weakened_rules"] == [{"rule": "health.device_majors", "probe": "health", "change": "downgraded",
                                        "how": "severity warn where docs/rules.yaml says fail", "by": "gpufleet_rule_overrides",
                                        "hosts": ["localhost"], "groups": ["rack_a"]}]
    with open(os.path.join(only_run_dir(results), "index.html"), encoding="utf-8") as handle:
        assert "health.device_majors" in handle.read().split('<h2 id="todo">')[0]
