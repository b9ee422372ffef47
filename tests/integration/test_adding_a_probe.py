"""docs/adding-a-probe.md, done as it says: its blocks are added to a temporary copy of the collection, and the toy
probe they make runs through the real playbook into the store, the judge and the dossier."""
import json
import os
import re
import shlex
import shutil
import subprocess
import sys

import pytest

from ansible_collections.gpufleet.validation.plugins.plugin_utils.store.run_dir import STORE_FILES
from ansible_collections.gpufleet.validation.plugins.plugin_utils.store.run_order import stored_run_ids

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
ANSIBLE_PLAYBOOK = os.path.join(os.path.dirname(sys.executable), "ansible-playbook")
PAGE = os.path.join(ROOT, "docs", "adding-a-probe.md")
BLOCK = re.compile(r"<!-- adding-a-probe: (write|run) ?(\S*) -->\n```[a-z]*\n(.*?)\n```", re.S)
# The page's table of the files a probe adds: "| 1 | `probes/toy.py` | ... |".
TABLE_ROW = re.compile(r"^\| (\d+) \| `([^`]+)` \|", re.M)
# The toy's own unit test and the unit contracts every probe is held to (the two schema tests and the generated lists'
# tests among them), run in the copy with the toy probe added.
UNIT_CONTRACTS = ["tests/unit/probes/test_toy.py", "tests/unit/test_probe_contracts.py", "tests/unit/test_metric_catalogue.py",
                  "tests/unit/test_schemas_shared.py", "tests/unit/test_schema_unit_limits.py", "tests/unit/judge/test_rule_texts.py",
                  "tests/unit/tools/test_params_tables.py", "tests/unit/tools/test_rules_list.py", "tests/unit/tools/test_profile_table.py",
                  "tests/unit/engine/test_param_spec.py", "tests/unit/test_probe_kit.py"]
# What the copy leaves out: the venv, the history, results and what the rig and CI leave behind.
NOT_COPIED = shutil.ignore_patterns(".git", ".venv", ".venv-test", ".ansible", ".whl", ".rig", "results", "collections", "__pycache__",
                                    "examples", "*.tar.gz")


def documented_blocks():
    with open(PAGE, encoding="utf-8") as handle:
        return BLOCK.findall(handle.read())


def _page():
    with open(PAGE, encoding="utf-8") as handle:
        return handle.read()


def test_the_page_creates_only_the_probes_own_files_and_edits_no_shared_one():
    steps = [(action, path) for action, path, _text in documented_blocks()]
    assert steps == [
        ("write", "probes/probe_packages/toy/__init__.py"), ("write", "probes/toy.py"),
        ("write", "plugins/plugin_utils/probes/toy/params.json"), ("write", "schemas/toy.schema.json"),
        ("write", "plugins/plugin_utils/probes/toy/__init__.py"), ("write", "plugins/plugin_utils/probes/toy/run.py"),
        ("write", "plugins/plugin_utils/probes/toy/metrics.py"), ("write", "plugins/plugin_utils/probes/toy/checks.py"),
        ("write", "plugins/plugin_utils/probes/toy/judging.py"), ("write", "plugins/plugin_utils/probes/toy/view.py"),
        ("write", "plugins/plugin_utils/probes/toy/rules.yaml"), ("write", "docs/toy.md"), ("run", ""),
        ("write", "tests/unit/probes/test_toy.py")]
    written = [path for action, path in steps if action == "write"]
    shared = [path for path in written if not path.startswith(("probes/toy.py", "probes/probe_packages/toy/", "plugins/plugin_utils/probes/toy/",
                                                               "schemas/toy.", "docs/toy.", "tests/unit/probes/test_toy."))]
    assert shared == []


def test_the_pages_count_and_table_are_the_files_its_executable_copy_writes():
    written = [path for action, path, _text in documented_blocks() if action == "write"]
    rows = TABLE_ROW.findall(_page())
    assert [int(number) for number, _path in rows] == list(range(1, len(rows) + 1))
    assert sorted(path for _number, path in rows) == sorted(written)
    assert "creates **%d files and edits no shared file**" % len(written) in _page()


def _run_documented(copy, text):
    """A `run` block: one command per line, split into argv (never a shell); python is this interpreter."""
    for line in text.splitlines():
        argv = shlex.split(line)
        argv = [sys.executable if argv[0] == "python" else argv[0]] + argv[1:]
        completed = subprocess.run(argv, cwd=copy, capture_output=True, text=True, timeout=120, check=False)
        assert completed.returncode == 0, (line, completed.stdout + completed.stderr)


@pytest.fixture(scope="module")
def collection_with_toy(tmp_path_factory):
    work = tmp_path_factory.mktemp("adding_a_probe")
    copy = work / "collection"
    shutil.copytree(ROOT, copy, ignore=NOT_COPIED)
    namespace = copy / "collections" / "ansible_collections" / "gpufleet"
    namespace.mkdir(parents=True)
    (namespace / "validation").symlink_to(os.path.join("..", "..", ".."))
    for action, path, text in documented_blocks():
        if action == "run":
            _run_documented(copy, text)
            continue
        assert not os.path.isabs(path) and ".." not in path.split("/"), path
        os.makedirs(os.path.dirname(copy / path), exist_ok=True)
        with open(copy / path, "x", encoding="utf-8") as handle:
            handle.write(text + "\n")
    contracts = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-m", "not gpu"] + UNIT_CONTRACTS,
                               cwd=copy, capture_output=True, text=True, timeout=900, check=False)
    results = work / "results"
    # report only: on this GPU-less machine the gate refuses the host (no GPU was validated there: host.gpu_measured)
    argv = [ANSIBLE_PLAYBOOK, "validate.yml", "-e", "gpufleet_profile=toy", "-e", "gpufleet_gate=false",
            "-e", "gpufleet_results_dir=%s" % results]
    completed = subprocess.run(argv, cwd=copy, capture_output=True, text=True, timeout=600, check=False)
    runs = stored_run_ids(str(results))  # the run index and the history page beside the runs are no runs
    return (completed.returncode, completed.stdout + completed.stderr, results / runs[0] if len(runs) == 1 else None,
            contracts.returncode, contracts.stdout + contracts.stderr)


def test_the_unit_contracts_hold_with_the_toy_probe_added(collection_with_toy):
    code, output = collection_with_toy[3:]
    assert code == 0, output


def test_the_toy_probe_runs_through_the_real_playbook_alone_in_its_profile(collection_with_toy):
    code, output, run_dir = collection_with_toy[:3]
    assert code == 0, output
    assert sorted(name for name in os.listdir(run_dir / "localhost") if name.endswith(".json")
                  and name not in STORE_FILES) == ["toy.json"], output
    with open(run_dir / "localhost" / "toy.json", encoding="utf-8") as handle:
        envelope = json.load(handle)
    assert envelope["status"] == "ok", envelope["reason"]
    assert len(envelope["data"]["repeats_us"]) == 3 and 0 < envelope["data"]["median_us"] < 10000000


def test_the_judge_holds_it_to_its_rule_and_compares_its_metric(collection_with_toy):
    _code, output, run_dir = collection_with_toy[:3]
    with open(run_dir / "fleet.json", encoding="utf-8") as handle:
        fleet = json.load(handle)
    checks = {check["id"]: check for check in fleet["hosts"]["localhost"]["checks"]}
    assert checks["toy.sum_time"]["status"] == "pass", output
    assert checks["toy.sum_time"]["unit"] == "us" and checks["toy.sum_time"]["reference"] == 10000000
    assert "toy.probe_status" not in checks
    assert "toy.sum_time_us" in json.dumps(fleet["fleet_statistics"]), fleet["fleet_statistics"]


def test_the_dossier_shows_its_section(collection_with_toy):
    _code, _output, run_dir = collection_with_toy[:3]
    with open(run_dir / "localhost" / "dossier.html", encoding="utf-8") as handle:
        dossier = handle.read()
    assert "Sum time of each repeat" in dossier and "Each repeat sums 1000000 integers." in dossier
    assert "toy.sum_time" in dossier
