"""Which of a host's Pythons runs the probes (plugins/module_utils/python_discovery.py, modules/find_python.py):
candidates in order, each environment once, what each really imports, the best chosen, and why."""
import os
import stat
import sys

import pytest

from ansible_collections.gpufleet.validation.plugins.module_utils import python_discovery as discovery
from ansible_collections.gpufleet.validation.plugins.module_utils import python_search
from ansible_collections.gpufleet.validation.plugins.modules import find_python
from ansible_collections.gpufleet.validation.plugins.plugin_utils.python_found import PythonFound
from ansible_collections.gpufleet.validation.plugins.plugin_utils.report.python_view import python_view


def fake_python(folder, name="python3", torch_cuda=None, torch=True, nvml=True, exit_code=None):
    """An executable that runs this test's Python with fake torch/pynvml packages first on its path: a real
    interpreter that imports what it is given, no more."""
    folder.mkdir(parents=True, exist_ok=True)
    site = folder / "site"
    site.mkdir(exist_ok=True)
    if torch:
        (site / "torch").mkdir(exist_ok=True)
        (site / "torch" / "version.py").write_text(
            "from typing import Optional\n__version__ = '2.9.0'\ncuda: Optional[str] = %r\nhip = None\n" % torch_cuda)
        (site / "torch" / "__init__.py").write_text("from . import version\n__version__ = version.__version__\n")
    (site / "pynvml.py").write_text("" if nvml else "raise ImportError('no pynvml here')\n")
    script = folder / name
    body = "exit %d\n" % exit_code if exit_code is not None else 'exec %s -S "$@"\n' % sys.executable
    script.write_text("#!/bin/sh\nPYTHONPATH=%s\nexport PYTHONPATH\n%s" % (site, body))
    script.chmod(script.stat().st_mode | stat.S_IXUSR)
    return str(script)


@pytest.fixture
def no_common_locations(monkeypatch):
    monkeypatch.setattr(discovery, "COMMON_LOCATIONS", ())


def test_candidates_come_in_order_each_environment_once(tmp_path, no_common_locations):
    first = fake_python(tmp_path / "a" / "bin")
    os.symlink("python3", str(tmp_path / "a" / "bin" / "python"))
    other = fake_python(tmp_path / "b" / "bin")
    found = discovery.candidate_paths([str(tmp_path / "*" / "bin" / "python*"), str(tmp_path / "missing")],
                                      first, {"VIRTUAL_ENV": str(tmp_path / "b")}, other, str(tmp_path))
    assert [(entry["path"], entry["source"]) for entry in found] == [
        (str(tmp_path / "a" / "bin" / "python"), discovery.SOURCE_USER),
        (other, discovery.SOURCE_USER),
        (str(tmp_path / "missing"), discovery.SOURCE_USER),
    ]


def test_a_home_location_is_expanded_in_the_connecting_users_home(tmp_path, monkeypatch):
    monkeypatch.setattr(discovery, "COMMON_LOCATIONS", ("~/miniforge3/envs/*/bin/python3",))
    path = fake_python(tmp_path / "miniforge3" / "envs" / "torch" / "bin")
    found = discovery.candidate_paths([], None, {}, None, str(tmp_path))
    assert found == [{"path": path, "source": "common location ~/miniforge3/envs/*/bin/python3"}]


def test_the_cuda_torch_with_nvml_wins_over_earlier_weaker_candidates(tmp_path, no_common_locations):
    cpu_only = fake_python(tmp_path / "cpu" / "bin", torch_cuda=None)
    nothing = fake_python(tmp_path / "bare" / "bin", torch=False, nvml=False)
    cuda = fake_python(tmp_path / "cuda" / "bin", torch_cuda="12.8")
    choice = find_python.find([cpu_only, nothing, cuda], 30)
    assert choice["found"] is True
    assert choice["python"] == cuda
    assert "torch built for CUDA and nvidia-ml-py" in choice["why"]
    by_path = {entry["path"]: entry for entry in choice["candidates"]}
    assert by_path[cuda]["chosen"] and by_path[cuda]["torch_cuda"] == "12.8"
    assert by_path[cpu_only]["torch"] == "2.9.0" and by_path[cpu_only]["torch_cuda"] is None
    assert "No module named 'torch'" in by_path[nothing]["torch_problem"]
    assert "no pynvml here" in by_path[nothing]["nvml_problem"]


def test_torch_is_imported_in_the_best_candidate_only_and_a_broken_one_loses(tmp_path, no_common_locations):
    broken = fake_python(tmp_path / "broken" / "bin", torch_cuda="12.8")
    with open(str(tmp_path / "broken" / "bin" / "site" / "torch" / "__init__.py"), "a") as handle:
        handle.write("raise OSError('libcudart.so.12: cannot open shared object file')\n")
    cuda = fake_python(tmp_path / "cuda" / "bin", torch_cuda="12.8")
    other = fake_python(tmp_path / "other" / "bin", torch_cuda="12.8")
    choice = find_python.find([broken, cuda, other], 30)
    assert choice["python"] == cuda
    by_path = {entry["path"]: entry for entry in choice["candidates"]}
    assert by_path[cuda]["torch_imported"] is True
    assert by_path[broken]["torch"] is None and "libcudart.so.12" in by_path[broken]["torch_problem"]
    assert by_path[other]["torch_imported"] is False and by_path[other]["torch_cuda"] == "12.8"


def test_among_equals_the_earliest_wins(tmp_path, no_common_locations):
    first = fake_python(tmp_path / "one" / "bin", torch_cuda=None)
    second = fake_python(tmp_path / "two" / "bin", torch_cuda=None)
    assert find_python.find([first, second], 30)["python"] == first


def test_none_suitable_falls_back_to_ansibles_python_and_lists_what_was_tried(
        tmp_path, no_common_locations, monkeypatch):
    monkeypatch.setattr(python_search.shutil, "which", lambda name: None)
    bare = fake_python(tmp_path / "bare" / "bin", torch=False, nvml=False)
    broken = fake_python(tmp_path / "broken" / "bin", exit_code=3)
    missing = str(tmp_path / "nowhere" / "python3")
    not_executable = tmp_path / "plain" / "python3"
    not_executable.parent.mkdir()
    not_executable.write_text("")
    monkeypatch.setattr(python_search.sys, "executable", bare)
    choice = find_python.find([broken, missing, str(not_executable)], 30)
    assert choice["found"] is False
    assert choice["python"] == bare
    for text in ("no Python on the host has torch or nvidia-ml-py", bare, broken, "exit 3", missing,
                 "does not exist", "is not executable by this user", "gpufleet_python_candidates"):
        assert text in choice["why"], text


def test_a_candidate_that_hangs_is_killed_after_its_timeout(tmp_path, no_common_locations):
    slow = tmp_path / "slow" / "python3"
    slow.parent.mkdir()
    slow.write_text("#!/bin/sh\nexec sleep 30\n")
    slow.chmod(0o755)
    entry = find_python.find([str(slow)], 1)["candidates"][0]
    assert entry["runs"] is False and "within 1 s" in entry["problem"]


def test_an_old_python_is_not_chosen(no_common_locations):
    entry = discovery.inspected({"path": "/usr/bin/python2", "source": "x"},
                                {"version": [2, 7, 18], "nvml": {"version": "1"}}, None)
    assert discovery.capability(entry) == (0, 0, 0)
    assert "older than 3.9" in entry["problem"]


def test_a_probe_left_unavailable_under_the_fallback_says_what_discovery_tried():
    found = PythonFound(None, {}, [])
    found.found({"python": "/usr/bin/python3", "found": False, "why": "no Python on the host has torch (tried: x)"},
                "")
    envelope = {"status": "unavailable", "reason": "torch is not importable"}
    found.explain(envelope)
    assert envelope["reason"] == "torch is not importable; Python discovery: no Python on the host has torch (tried: x)"
    ok = {"status": "ok", "reason": ""}
    found.explain(ok)
    assert ok["reason"] == ""


def test_a_discovery_that_could_not_run_leaves_the_probe_to_ansibles_python():
    found = PythonFound(None, {}, [])
    found.found(None, "MODULE FAILURE: /usr/bin/python3: not found")
    assert found.choice["python"] is None and "could not be looked for: MODULE FAILURE" in found.choice["why"]


def test_the_dossier_view_lists_every_candidate_with_the_chosen_one(tmp_path, no_common_locations):
    cuda = fake_python(tmp_path / "cuda" / "bin", torch_cuda="12.8")
    bare = fake_python(tmp_path / "bare" / "bin", torch=False, nvml=False)
    choice = find_python.find([bare, cuda], 30)
    view = python_view({"python": cuda, "python_choice": choice})
    assert view["python"] == cuda and view["how"].startswith("found on the host: gpufleet_python_candidates")
    assert [(row["path"], row["outcome"]) for row in view["candidates"]][:2] == [(bare, "not chosen"), (cuda, "chosen")]
    assert "torch 2.9.0 (CUDA 12.8), nvidia-ml-py" in view["candidates"][1]["offer"]


def test_the_dossier_view_of_a_python_given_or_of_an_older_run():
    assert python_view({"python": "/opt/torch/bin/python3"})["how"] == "given by gpufleet_python"
    assert "predates" in python_view({"python": "the interpreter Ansible uses on the host"})["how"]
    assert python_view({}) is None


def _counting_imports(folder, torch_cuda="12.8"):
    """A fake Python whose torch writes a line to imports.log each time it is imported."""
    path = fake_python(folder, torch_cuda=torch_cuda)
    log = folder / "imports.log"
    with open(str(folder / "site" / "torch" / "__init__.py"), "a") as handle:
        handle.write("open(%r, 'a').write('imported\\n')\n" % str(log))
    return path, log


def _imports(log):
    return len(log.read_text().splitlines()) if log.exists() else 0


def test_a_torch_import_proven_by_the_previous_run_is_not_repeated_in_an_unchanged_environment(
        tmp_path, no_common_locations):
    python, log = _counting_imports(tmp_path / "env" / "bin")
    first = find_python.find([python], 30)
    assert _imports(log) == 1 and first["python"] == python
    proof = discovery.import_proof(first, "20261201T000000Z-000001")
    assert proof["run_id"] == "20261201T000000Z-000001" and proof["path"] == python
    again = find_python.find([python], 30, proof)
    assert _imports(log) == 1  # not imported again
    chosen = [entry for entry in again["candidates"] if entry["chosen"]][0]
    assert again["python"] == python and chosen["torch_imported"] is True
    assert chosen["import_proven_in"] == "20261201T000000Z-000001"
    assert "run 20261201T000000Z-000001 proved it" in again["why"]
    # A proof taken from a reused choice still names the run whose import proved it.
    assert discovery.import_proof(again, "20261202T000000Z-000002")["run_id"] == "20261201T000000Z-000001"
    view = python_view({"python_choice": again, "python": python})
    assert view["candidates"][0]["outcome"] == "chosen (torch's import proven in run 20261201T000000Z-000001, unchanged since)"


@pytest.mark.parametrize("change", ["a package installed beside torch", "torch reinstalled", "another interpreter"])
def test_any_change_of_the_environment_imports_torch_again(tmp_path, no_common_locations, change):
    python, log = _counting_imports(tmp_path / "env" / "bin")
    proof = discovery.import_proof(find_python.find([python], 30), "20261201T000000Z-000001")
    site = tmp_path / "env" / "bin" / "site"
    if change == "a package installed beside torch":
        (site / "numpy").mkdir()
    elif change == "torch reinstalled":
        version = site / "torch" / "version.py"
        text = version.read_text()
        version.unlink()
        version.write_text(text)
    else:
        proof = dict(proof, fingerprint=dict(proof["fingerprint"], interpreter=["/elsewhere/python3", 1, 2, 3]))
    again = find_python.find([python], 30, proof)
    assert _imports(log) == 2
    chosen = [entry for entry in again["candidates"] if entry["chosen"]][0]
    assert chosen["torch_imported"] is True and "import_proven_in" not in chosen
    assert "proved it" not in again["why"]


def test_a_torch_broken_since_the_proof_is_found_broken(tmp_path, no_common_locations):
    python, log = _counting_imports(tmp_path / "env" / "bin")
    proof = discovery.import_proof(find_python.find([python], 30), "20261201T000000Z-000001")
    with open(str(tmp_path / "env" / "bin" / "site" / "torch" / "__init__.py"), "a") as handle:
        handle.write("raise OSError('libcudart.so.13: cannot open shared object file')\n")
    (tmp_path / "env" / "bin" / "site" / "libcudart_gone").write_text("")  # what an upgrade leaves in site-packages
    again = find_python.find([python], 30, proof)
    entry = again["candidates"][0]
    assert entry["torch"] is None and "libcudart.so.13" in entry["torch_problem"]


def test_no_proof_from_a_choice_that_imported_nothing_or_a_python_given():
    assert discovery.import_proof(None, "r") is None
    assert discovery.import_proof({"candidates": [{"chosen": True, "torch_imported": False, "fingerprint": {}}]}, "r") is None
    assert discovery.import_proof({"candidates": [{"chosen": True, "torch_imported": True}]}, "r") is None


def test_the_proof_comes_from_the_hosts_newest_earlier_run_only(tmp_path):
    from ansible_collections.gpufleet.validation.plugins.plugin_utils.store.previous import previous_python_proof
    import json
    chosen = {"chosen": True, "torch_imported": True, "path": "/opt/t/bin/python3", "executable": "/opt/t/bin/python3",
              "torch": "2.11.0", "torch_cuda": "13.0", "nvml": "13.5",
              "fingerprint": {"torch_version_file": ["/v.py", 1, 2, 3]}}

    def inputs(run_id, choice):
        folder = tmp_path / run_id / "gpu-1"
        folder.mkdir(parents=True)
        record = {"host": "gpu-1", "python": "/opt/t/bin/python3"}
        if choice is not None:
            record["python_choice"] = {"python": "/opt/t/bin/python3", "candidates": [choice]}
        (folder / "inputs.json").write_text(json.dumps(record))

    inputs("20261201T000000Z-000001", chosen)
    current = "20261203T000000Z-000003"
    assert previous_python_proof(str(tmp_path), current, "gpu-1")["run_id"] == "20261201T000000Z-000001"
    assert previous_python_proof(str(tmp_path), current, "gpu-2") is None
    inputs("20261202T000000Z-000002", None)  # the newest earlier run was given gpufleet_python: nothing to reuse
    assert previous_python_proof(str(tmp_path), current, "gpu-1") is None


def test_a_search_that_fails_in_the_probes_start_leaves_the_probe_to_run_and_says_why(monkeypatch):
    from ansible_collections.gpufleet.validation.plugins.modules import probe as probe_module  # pylint: disable=import-outside-toplevel

    def broken(*unused):
        raise OSError("No space left on device")

    monkeypatch.setattr(probe_module, "find", broken)
    answer = probe_module.discovered({"candidates": [], "timeout": 60, "proven": None})
    assert answer == {"discovery_failure": "Python discovery failed on the host: OSError: No space left on device"}
    assert probe_module.discovered(None) == {}
    found = PythonFound(None, None, [])
    found.found(answer.get("choice"), answer["discovery_failure"])
    assert found.choice["python"] is None and found.choice["found"] is False
    assert found.choice["why"] == ("the Python on the host could not be looked for: Python discovery failed on the host: "
                                   "OSError: No space left on device")


@pytest.mark.parametrize("home_name, neighbour", [("home dir [x]", "home dir x"), ("home*", "home-other"),
                                                  ("home?", "homeA")])
def test_a_home_whose_name_holds_glob_characters_is_never_globbed(tmp_path, monkeypatch, home_name, neighbour):
    """Issue 45: a home '.../home dir [x]' with ~/.venv/bin/python3 beside a directory '.../home dir x' with one too:
    discovery globbed the home itself, took the other directory's interpreter and never tried the user's own."""
    monkeypatch.setattr(discovery, "COMMON_LOCATIONS", ("~/.venv/bin/python3", "~/miniforge3/envs/*/bin/python3"))
    home = tmp_path / home_name
    own = fake_python(home / ".venv" / "bin")
    env = fake_python(home / "miniforge3" / "envs" / "torch" / "bin")
    fake_python(tmp_path / neighbour / ".venv" / "bin")
    fake_python(tmp_path / neighbour / "miniforge3" / "envs" / "torch" / "bin")
    found = discovery.candidate_paths([], None, {}, None, str(home))
    assert [entry["path"] for entry in found] == [own, env]
    # the user's own candidates: a glob below the home, and a literal path with brackets that exists as written
    found = discovery.candidate_paths(["~/miniforge3/envs/*/bin/python3", own], None, {}, None, str(home))
    assert [entry["path"] for entry in found][:2] == [env, own]


def test_an_import_slower_than_the_limit_keeps_the_candidate_its_scan_found_and_says_so(tmp_path, no_common_locations):
    """Issue 45: on a loaded controller the 60 s import limit made 161 of 200 hosts fall back to a Python without torch or
    nvidia-ml-py, reported later as "nvidia-ml-py is not installed for /usr/bin/python3"."""
    slow = fake_python(tmp_path / "slow" / "bin", torch_cuda="12.8")
    init = tmp_path / "slow" / "bin" / "site" / "torch" / "__init__.py"
    init.write_text("import time\ntime.sleep(30)\n" + init.read_text())
    nothing = fake_python(tmp_path / "bare" / "bin", torch=False, nvml=False)
    choice = find_python.find([slow, nothing], 2)
    assert choice["found"] is True and choice["python"] == slow, choice["why"]
    assert "its import check did not finish importing torch and nvidia-ml-py within 2 s (a loaded host?)" in choice["why"]
    # a probe that then measured nothing under it names the slow import as its cause on the host's verdict, not a
    # later "not installed"; one that measured keeps its own reason
    found = PythonFound(None, {}, [])
    found.found(choice, "")
    failed = {"status": "error", "reason": "torch could not be imported"}
    found.explain(failed)
    assert failed["reason"].startswith("torch could not be imported; Python discovery: ")
    assert "its import check did not finish importing torch and nvidia-ml-py within 2 s (a loaded host?)" in failed["reason"]
    measured = {"status": "ok", "reason": ""}
    found.explain(measured)
    assert measured["reason"] == ""
