"""Bad input to the real `ansible-playbook validate.yml`: a clear error before anything runs, or safe handling.

Inventory variables of the wrong type or out of range, an unknown profile or probe, a broken rule override or rules
file stop the run in its first play (gpufleet.validation.check_inputs) with one line per problem that names the host,
the variable and what is wrong: no probe task starts and the results directory is never created. What only a probe
or the judge can know is handled per host instead: a probe refuses a parameter it does not know (that host's result
is an error that names the parameters it takes, the other hosts are validated in full); a broken baseline file is
reported in the fleet index and the run goes on. Host names with path separators, shell syntax or HTML stay inside
the run's directory, are escaped in every report, and are never executed.
"""
import json
import os
import re
import shutil
import subprocess
import sys
import urllib.parse

import pytest
import yaml
from junitparser import JUnitXml
from prometheus_client.parser import text_string_to_metric_families
from ansible_collections.gpufleet.validation.plugins.plugin_utils.probe_kit.registry import declarations
from ansible_collections.gpufleet.validation.plugins.plugin_utils.store.paths import HISTORY_INDEX_FILE, HISTORY_INDEX_SIDE_FILES, HISTORY_PAGE_FILE
from test_validate_playbook import (  # pylint: disable=import-error
    ANSIBLE_PLAYBOOK,
    ROOT,
    assert_schema_valid,
    only_run_dir,
    run_playbook,
)

# The health probe alone, without its CUDA initialisation: these tests are about the inputs, not the measurements.
HEALTH_ONLY = ("-e", "gpufleet_profile=health")
NO_CUDA_INIT = {"health": {"cuda_init": False}}
# Report only: every profile gates (issue 44) and the gate refuses a CPU host (no headline proven), so a test about
# inputs that reads a completed run's exit code asks for no gate.
REPORT_ONLY = ("-e", "gpufleet_gate=false")
REFUSED = "problem(s) in the run's inputs, so nothing was run"
# The probe scripts of the collection, as the refusals list them (sorted by name).
KNOWN_PROBES = "known probes: %s" % ", ".join(sorted(declarations()))


def write_inventory(path, hosts, group_vars=None):
    """Every host is this machine (connection local); hosts: {name: {variable: value}}."""
    variables = {"ansible_connection": "local", "ansible_python_interpreter": sys.executable}
    variables.update(group_vars or {})
    path.write_text(yaml.safe_dump({"all": {"vars": variables, "hosts": hosts}}))
    return str(path)


def assert_refused_before_anything_ran(code, output, results, *expected):
    assert code != 0, output
    assert REFUSED in output, output
    for text in expected:
        assert text in output, (text, output)
    assert "TASK [gpufleet.validation.probe" not in output, "a probe task started"
    assert not os.path.exists(results), os.listdir(results)


BAD_HOST_VARIABLES = [
    ("profile-number", {"gpufleet_profile": 5},
     ["localhost: gpufleet_profile is a number 5, not a profile (known profiles: ", "quick"]),
    ("profile-list", {"gpufleet_profile": ["quick"]}, ["localhost: gpufleet_profile is a list ['quick'], not a profile"]),
    ("profile-unknown", {"gpufleet_profile": "bogus"},
     ["localhost: gpufleet_profile is a string 'bogus', not a profile (known profiles: ", "acceptance", "full"]),
    ("timeout-negative", {"probe_timeouts": {"health": -1}},
     ["localhost: probe_timeouts.health is -1; a time limit must be at least 1 second"]),
    ("timeout-zero", {"probe_timeouts": {"membw": 0}}, ["localhost: probe_timeouts.membw is 0; a time limit must be at least 1 second"]),
    ("timeout-string", {"probe_timeouts": {"health": "soon"}},
     ["localhost: probe_timeouts.health must be a whole number of seconds (1 to 86400), not a string 'soon'"]),
    ("timeout-beyond-a-day", {"probe_timeouts": {"health": 99999999999}},
     ["localhost: probe_timeouts.health is 99999999999; a time limit may be at most 86400 seconds (a day)"]),
    ("timeout-boolean", {"probe_timeouts": {"health": True}}, ["probe_timeouts.health must be a whole number of seconds", "not a boolean"]),
    ("timeouts-not-a-mapping", {"probe_timeouts": 600},
     ["localhost: probe_timeouts must be a mapping of probe name to its setting", "not a number 600"]),
    ("timeout-unknown-probe", {"probe_timeouts": {"helth": 10}}, ["localhost: probe_timeouts.helth: no such probe (%s)" % KNOWN_PROBES]),
    ("params-not-a-mapping", {"probe_params": "cuda_init=false"},
     ["localhost: probe_params must be a mapping of probe name to its setting", "not a string 'cuda_init=false'"]),
    ("params-of-a-probe-not-a-mapping", {"probe_params": {"health": ["cuda_init"]}},
     ["localhost: probe_params.health must be a mapping of parameter name to value, not a list"]),
    ("params-unknown-probe", {"probe_params": {"nccl_tests": {}}}, ["localhost: probe_params.nccl_tests: no such probe (%s)" % KNOWN_PROBES]),
    ("python-number", {"gpufleet_python": 3}, ["localhost: gpufleet_python must be a string", "not a number 3"]),
    ("python-list", {"gpufleet_python": ["/usr/bin/python3"]},
     ["localhost: gpufleet_python must be a string", "not a list ['/usr/bin/python3']"]),
    ("python-candidates-string", {"gpufleet_python_candidates": "/opt/torch/bin/python3"},
     ["localhost: gpufleet_python_candidates must be a list of interpreter paths", "not a string '/opt/torch/bin/python3'"]),
    ("python-candidates-empty-path", {"gpufleet_python_candidates": [""]},
     ["localhost: gpufleet_python_candidates must be a list of interpreter paths", "not a list ['']"]),
    ("overrides-not-a-mapping", {"gpufleet_rule_overrides": "health.gpu_count=4"},
     ["localhost: gpufleet_rule_overrides must be a mapping of rule id to {severity, params, enabled}, not a string"]),
    ("overrides-unknown-rule", {"gpufleet_rule_overrides": {"health.gpu_cnt": {"params": {"expected": 4}}}},
     ["localhost: gpufleet_rule_overrides.health.gpu_cnt: no such rule (known: ", "health.gpu_count"]),
    ("overrides-unknown-param", {"gpufleet_rule_overrides": {"health.gpu_count": {"params": {"wanted": 4}}}},
     ["localhost: gpufleet_rule_overrides.health.gpu_count.params.wanted: the rule has no such param (it takes: expected)"]),
    ("overrides-param-of-the-wrong-kind", {"gpufleet_rule_overrides": {"health.gpu_count": {"params": {"expected": "four"}}}},
     ["localhost: gpufleet_rule_overrides.health.gpu_count.params.expected: param expected must be a number (or null), not a string 'four'"]),
    ("overrides-list-param-given-a-string",
     {"gpufleet_rule_overrides": {"health.gpu_processes": {"params": {"allowed_process_names": "dcgm-exporter"}}}},
     ["gpufleet_rule_overrides.health.gpu_processes.params.allowed_process_names: param allowed_process_names must be a list, not a string"]),
    ("overrides-unknown-severity", {"gpufleet_rule_overrides": {"health.gpu_count": {"severity": "fatal"}}},
     ["localhost: at gpufleet_rule_overrides.health.gpu_count.severity: 'fatal' is not one of ['fail', 'warn']"]),
]


@pytest.mark.parametrize("host_variables,expected", [case[1:] for case in BAD_HOST_VARIABLES],
                         ids=[case[0] for case in BAD_HOST_VARIABLES])
def test_an_inventory_variable_of_the_wrong_type_or_range_stops_the_run_before_anything_runs(tmp_path, host_variables, expected):
    inventory = write_inventory(tmp_path / "inventory.yml", {"localhost": host_variables})
    results = tmp_path / "results"
    code, output = run_playbook(results, "-i", inventory)
    assert_refused_before_anything_ran(code, output, results, "1 " + REFUSED, *expected)


BAD_CONTROLLER_VARIABLES = [
    ("results-dir-empty", {"gpufleet_results_dir": ""},
     ["gpufleet_results_dir must be a directory on the controller (default: results), not an empty string"]),
    ("results-dir-list", {"gpufleet_results_dir": ["results"]}, ["gpufleet_results_dir must be a directory on the controller", "not a list"]),
    ("run-id-escaping", {"gpufleet_run_id": "../../escape"},
     ["gpufleet_run_id '../../escape': run id '../../escape' must be 1-128 letters, digits, '.', '_' or '-'"]),
    ("baselines-dir-missing", {"gpufleet_baselines_dir": "/nonexistent/baselines"}, ["gpufleet_baselines_dir /nonexistent/baselines is not a folder"]),
    ("rules-file-missing", {"gpufleet_rules_file": "/nonexistent/rules.yaml"},
     ["gpufleet_rules_file: /nonexistent/rules.yaml cannot be read: No such file or directory"]),
    ("report-rules-file-missing", {"report_rules_file": "/nonexistent/report-rules.yaml"},
     ["report_rules_file: /nonexistent/report-rules.yaml cannot be read: No such file or directory"]),
]


@pytest.mark.parametrize("extra_variables,expected", [case[1:] for case in BAD_CONTROLLER_VARIABLES],
                         ids=[case[0] for case in BAD_CONTROLLER_VARIABLES])
def test_a_bad_controller_variable_stops_the_run_and_writes_nothing(tmp_path, extra_variables, expected):
    before = set(os.listdir(ROOT))
    results = tmp_path / "results"
    code, output = run_playbook(results, "-e", json.dumps(extra_variables))
    assert_refused_before_anything_ran(code, output, results, *expected)
    # An empty results directory would have meant the directory ansible-playbook runs from.
    assert not set(os.listdir(ROOT)) - before
    assert os.listdir(tmp_path) == []


def test_every_problem_of_every_host_is_listed_and_a_good_host_is_not_probed_either(tmp_path):
    inventory = write_inventory(tmp_path / "inventory.yml", {
        "node-a": {},
        "node-b": {"probe_timeouts": {"health": 0}},
        "node-c": {"gpufleet_profile": 5, "probe_params": {"health": "fast"}},
    })
    results = tmp_path / "results"
    code, output = run_playbook(results, "-i", inventory)
    assert_refused_before_anything_ran(code, output, results, "3 " + REFUSED, "node-b: probe_timeouts.health is 0",
                                       "node-c: gpufleet_profile is a number 5", "node-c: probe_params.health must be a mapping")
    assert "node-a:" not in output.split(REFUSED, 1)[1]


def test_a_profile_naming_an_unknown_probe_is_refused_listing_the_known_probes(tmp_path):
    results = tmp_path / "results"
    code, output = run_playbook(results, "-e", json.dumps({"gpufleet_profiles": {"mine": ["health", "nvbandwidth"]}}))
    assert_refused_before_anything_ran(code, output, results, "profile mine names unknown probe(s) nvbandwidth (%s)" % KNOWN_PROBES)


VALID_RULE = "  - id: health.gpu_count\n    probe: health\n    check: gpu_count\n    severity: fail\n    description: GPUs.\n"
BAD_RULES_FILES = [
    ("yaml-syntax", "rules:\n  - id: health.gpu_count\n   probe: [health\n", ["is not valid YAML", "line 3"]),
    ("duplicate-key", "rules:\n" + VALID_RULE + "    severity: warn\n", ["is not valid YAML", "found duplicate key 'severity'"]),
    ("not-a-mapping", "- " + VALID_RULE.strip() + "\n", ["breaks schemas/rules.schema.json", "is not of type 'object'"]),
    ("schema-violation", "rules:\n" + VALID_RULE.replace("severity: fail", "severity: fatal") + "    colour: red\n",
     ["breaks schemas/rules.schema.json", "'fatal' is not one of ['fail', 'warn']", "('colour' was unexpected)"]),
    ("unknown-check", "rules:\n" + VALID_RULE.replace("check: gpu_count", "check: gpu_cunt"),
     ["rule health.gpu_count: check 'gpu_cunt' is not a health check (known: "]),
]


@pytest.mark.parametrize("text,expected", [case[1:] for case in BAD_RULES_FILES], ids=[case[0] for case in BAD_RULES_FILES])
def test_a_malformed_rules_file_is_refused_naming_the_file_and_the_problem(tmp_path, text, expected):
    rules_file = tmp_path / "my-rules.yaml"
    rules_file.write_text(text)
    results = tmp_path / "results"
    code, output = run_playbook(results, "-e", "gpufleet_rules_file=%s" % rules_file)
    assert_refused_before_anything_ran(code, output, results, "gpufleet_rules_file: %s" % rules_file, *expected)


CUSTOM_RULE_IDS = ["health.ecc_enabled", "health.gpu_count"]


@pytest.fixture(scope="module")
def custom_judge_run(tmp_path_factory):
    """One run with the user's own rules file (two rules) and baselines folder (the collection's, plus two broken files)."""
    work = tmp_path_factory.mktemp("judge_inputs")
    with open(os.path.join(ROOT, "docs", "rules.yaml")) as handle:
        rules = yaml.safe_load(handle)
    rules["rules"] = [rule for rule in rules["rules"] if rule["id"] in CUSTOM_RULE_IDS]
    (work / "rules.yaml").write_text(yaml.safe_dump(rules))
    baselines = work / "baselines"
    shutil.copytree(os.path.join(ROOT, "baselines"), baselines)
    (baselines / "broken.yaml").write_text("id: broken\nmatch: {name_regex: [unclosed\n")
    (baselines / "incomplete.yaml").write_text("id: incomplete\nname: only a name\n")
    results = work / "results"
    code, output = run_playbook(results, *HEALTH_ONLY, *REPORT_ONLY, "-e", json.dumps({
        "gpufleet_rules_file": str(work / "rules.yaml"), "gpufleet_baselines_dir": str(baselines), "probe_params": NO_CUDA_INIT}))
    return code, output, results, baselines


def test_a_malformed_baseline_file_is_reported_by_name_and_the_run_completes(custom_judge_run):
    code, output, results, baselines = custom_judge_run
    assert code == 0, output
    # Said before anything runs, and again in the fleet report.
    assert "[WARNING]: gpufleet_baselines_dir: {0}/broken.yaml skipped: {0}/broken.yaml is not valid YAML".format(baselines) in output
    assert "%s/incomplete.yaml skipped: it breaks schemas/baseline.schema.json" % baselines in output
    run_dir = only_run_dir(results)
    with open(os.path.join(run_dir, "localhost", "health.json")) as handle:
        assert_schema_valid(json.load(handle))
    with open(os.path.join(run_dir, "fleet.json")) as handle:
        fleet = json.load(handle)
    problems = [check["reason"] for check in fleet["unmatched_rules"] if check["id"] == "baselines.load"]
    assert [check["status"] for check in fleet["unmatched_rules"] if check["id"] == "baselines.load"] == ["error", "error"]
    assert problems[0].startswith("{0}/broken.yaml skipped: {0}/broken.yaml is not valid YAML".format(baselines))
    assert problems[1].startswith("%s/incomplete.yaml skipped: it breaks schemas/baseline.schema.json" % baselines)
    assert "'match' is a required property" in problems[1]
    for name in ("index.html", "index.md"):
        with open(os.path.join(run_dir, name)) as handle:
            text = handle.read()
        assert "baselines/broken.yaml skipped" in text and "baselines/incomplete.yaml skipped" in text
    # the user's rules have no health.cuda_init (nor device_majors): what health promises is not proven (issue 44)
    localhost = fleet["hosts"]["localhost"]
    assert localhost["verdict"] == "not_validated", localhost
    assert any(proof["check"] == "health.cuda_init" and proof["because"] == "the rules in use have no rule health.cuda_init"
               for proof in localhost["not_proven"]), localhost["not_proven"]


def test_the_users_own_rules_file_is_the_one_the_judge_uses(custom_judge_run):
    results = custom_judge_run[2]
    with open(os.path.join(only_run_dir(results), "fleet.json")) as handle:
        fleet = json.load(handle)
    with open(os.path.join(ROOT, "docs", "rules.yaml")) as handle:
        default_ids = {rule["id"] for rule in yaml.safe_load(handle)["rules"]}
    judged = {check["id"] for check in fleet["unmatched_rules"]}
    judged.update(check["id"] for host in fleet["hosts"].values() for check in host["checks"])
    assert judged & default_ids == set(CUSTOM_RULE_IDS), judged


def test_rejudging_a_stored_run_with_broken_overrides_reports_them_per_host_instead_of_crashing(custom_judge_run, tmp_path):
    results = tmp_path / "results"
    shutil.copytree(custom_judge_run[2], results, symlinks=True)
    run_id = os.path.basename(only_run_dir(results))
    overrides = {"health.gpu_count": {"params": {"expected": "four"}}, "health.gpu_cnt": {"severity": "warn"}}
    argv = [ANSIBLE_PLAYBOOK, "playbooks/report.yml", "-i", "localhost,", "-e", "gpufleet_hosts=all", "-e", "gpufleet_run_id=%s" % run_id,
            "-e", "gpufleet_results_dir=%s" % results, "-e", json.dumps({"gpufleet_rule_overrides": overrides}), *REPORT_ONLY]
    completed = subprocess.run(argv, cwd=ROOT, capture_output=True, text=True, timeout=300, check=False)
    output = completed.stdout + completed.stderr
    assert completed.returncode == 0, output
    assert "Traceback" not in output and "Task failed" not in output
    with open(os.path.join(results, run_id, "fleet.json")) as handle:
        host = json.load(handle)["hosts"]["localhost"]
    assert host["verdict"] == "error"
    problems = [check["reason"] for check in host["checks"] if check["id"] == "rules.overrides"]
    assert "override for health.gpu_count: param expected must be a number (or null), not a string 'four'; the rule keeps its default" in problems
    assert any(problem.startswith("override for unknown rule health.gpu_cnt") for problem in problems)


def test_an_unknown_or_mistyped_probe_parameter_is_refused_before_anything_runs(tmp_path):
    # Issue 33: a typo (cuda_inti) used to go ahead and end the probe in error on that host; the spec (params.json)
    # lets check_inputs refuse it first, naming the known parameters, and a value out of range with what it allows.
    inventory = write_inventory(tmp_path / "inventory.yml", {
        "node-ok": {},
        "node-unknown": {"probe_params": {"health": {"cuda_init": False, "cuda_inti": False}}},
        "node-mistyped": {"probe_params": {"health": {"cuda_init": False, "kernel_log_lines": "many"}}},
        "node-out-of-range": {"probe_params": {"health": {"cuda_init": False, "kernel_log_lines": -1}}},
    }, group_vars={"probe_params": NO_CUDA_INIT})
    results = tmp_path / "results"
    code, output = run_playbook(results, "-i", inventory, *HEALTH_ONLY)
    assert_refused_before_anything_ran(
        code, output, results, "3 " + REFUSED,
        "node-unknown: probe_params.health.cuda_inti: no such parameter of the health probe "
        "(known: cuda_init, cuda_init_timeout_s, device_open_test, kernel_log_lines)",
        "node-mistyped: probe_params.health.kernel_log_lines: 'many' is not of type 'integer'",
        "node-out-of-range: probe_params.health.kernel_log_lines: -1 is less than the minimum of 0")
    assert "node-ok:" not in output.split(REFUSED, 1)[1]


HOSTILE_NAMES = ["../evil", "..", "a/b", "<script>alert(1)</script>", "$(touch {tmp}/pwned-dollar)", "x;touch {tmp}/pwned-semicolon",
                 "`touch {tmp}/pwned-backtick`"]


def _files_under(top):
    for folder, subfolders, files in os.walk(top):
        for name in files + [entry for entry in subfolders if os.path.islink(os.path.join(folder, entry))]:
            yield os.path.join(folder, name)


def test_host_names_with_path_separators_shell_or_html_stay_inside_the_run_and_are_escaped(tmp_path):
    names = [name.format(tmp=tmp_path) for name in HOSTILE_NAMES]
    inventory = write_inventory(tmp_path / "inventory.yml", {name: {} for name in names}, group_vars={"probe_params": NO_CUDA_INIT})
    results = tmp_path / "out" / "results"
    code, output = run_playbook(results, "-i", inventory, *HEALTH_ONLY, *REPORT_ONLY)
    assert code == 0, output
    run_dir = only_run_dir(results)

    # Nothing outside the run's directory but the inventory, the `latest` link, and the results directory's run index
    # and history page (docs/history.md: fixed names beside the runs, no host's); nothing was executed.
    beside = [os.path.join(results, name) for name in ("latest", HISTORY_INDEX_FILE, HISTORY_PAGE_FILE) + HISTORY_INDEX_SIDE_FILES]
    for path in _files_under(tmp_path):
        inside = os.path.commonpath([os.path.realpath(path), os.path.realpath(run_dir)]) == os.path.realpath(run_dir)
        assert inside or path in [str(tmp_path / "inventory.yml")] + beside, path
    # The outcomes' file names carry the escaped host names, as the host directories do; any other file named so would
    # be a command that ran.
    outcomes = os.path.join(run_dir, "outcomes")
    assert not [path for path in _files_under(tmp_path)
                if "pwned" in os.path.basename(path) and os.path.dirname(path) != outcomes]
    assert not os.path.exists(os.path.join(ROOT, "evil")) and not os.path.exists(tmp_path / "out" / "evil")

    # One directory per host, each holding that host's results, and nothing else.
    host_dirs = [entry for entry in os.listdir(run_dir) if os.path.isdir(os.path.join(run_dir, entry)) and entry != "outcomes"]
    assert len(host_dirs) == len(names), host_dirs
    assert sorted(os.listdir(os.path.join(run_dir, "outcomes"))) == sorted(entry + ".json" for entry in host_dirs)
    seen = []
    for entry in host_dirs:
        stored = ["dossier.html", "dossier.md", "health.json", "inputs.json", "measurements.html", "measurements.md", "writer.json"]
        assert sorted(os.listdir(os.path.join(run_dir, entry))) == stored
        with open(os.path.join(run_dir, entry, "health.json")) as handle:
            envelope = json.load(handle)
        assert_schema_valid(envelope)
        seen.append(envelope["host"])
    assert sorted(seen) == sorted(names)

    with open(os.path.join(run_dir, "fleet.json")) as handle:
        fleet = json.load(handle)
    assert sorted(fleet["hosts"]) == sorted(names)
    for host in fleet["hosts"].values():
        dossier = os.path.realpath(os.path.join(run_dir, host["dossier"]["html"]))
        assert os.path.dirname(os.path.dirname(dossier)) == os.path.realpath(run_dir) and os.path.isfile(dossier)

    # HTML: no markup from a host name, every link to a dossier resolves inside the run.
    with open(os.path.join(run_dir, "index.html")) as handle:
        index = handle.read()
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in index
    # Each host is linked once in the hosts table, and once more in "What to do" when it did not pass.
    links = sorted(set(urllib.parse.unquote(href) for href in re.findall(r'href="([^"]*/dossier\.html)"', index)))
    assert len(links) == len(names)
    for link in links:
        target = os.path.realpath(os.path.join(run_dir, link))
        assert os.path.dirname(os.path.dirname(target)) == os.path.realpath(run_dir) and os.path.isfile(target), link
    for path in [os.path.join(run_dir, "index.html")] + [os.path.join(run_dir, entry, "dossier.html") for entry in host_dirs]:
        with open(path) as handle:
            assert "<script" not in handle.read().lower(), path
    with open(os.path.join(run_dir, "index.md")) as handle:
        index_md = handle.read()
    assert "<script>" not in index_md and "\\<script\\>alert(1)\\</script\\>" in index_md

    # The machine-readable exports keep the names exactly.
    suites = [suite.name for suite in JUnitXml.fromfile(os.path.join(run_dir, "junit.xml"))]
    assert sorted(name for name in suites if name != "(rules that matched nothing)") == sorted(names)
    with open(os.path.join(run_dir, "gpufleet.prom")) as handle:
        families = {family.name: family for family in text_string_to_metric_families(handle.read())}
    labelled = {sample.labels["host"] for sample in families["gpufleet_host_verdict"].samples}
    assert labelled == set(names)
