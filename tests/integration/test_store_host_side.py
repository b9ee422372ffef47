"""The host side of the store, through the real `ansible-playbook validate.yml` (connection local, three hosts that
are this machine): what a probe writes reaches the results directory as what it is, and nothing it should not.

One host's gpufleet_python misbehaves for the health probe (tests/unit/engine/fake_probes/misbehaving_python.py)
and runs its other probes for real. Each run starts from a results directory that already holds an earlier run of
the same hosts; it must stay byte for byte as it was.
"""
import json
import os
import shutil
import subprocess
import sys

import pytest

from test_bad_input import write_inventory  # pylint: disable=import-error

HERE = os.path.dirname(os.path.abspath(__file__))
TESTS = os.path.dirname(HERE)
for folder in (os.path.join(TESTS, "fleet"), os.path.join(TESTS, "unit", "engine", "fake_probes")):
    if folder not in sys.path:
        sys.path.insert(0, folder)

from faults import runs  # noqa: E402  pylint: disable=wrong-import-position
import misbehaving_python  # noqa: E402  pylint: disable=wrong-import-position

GOOD = ("node-good-1", "node-good-2")
VICTIM = "node-victim"
# The health probe alone (without CUDA initialisation) keeps a run at a few seconds; runs.QUICK adds membw, to see the
# victim's next probe run for real. Both report only (gpufleet_gate: false): a CPU host proves no headline (issue 44),
# and these tests are about what the store keeps, not the gate.
HEALTH = ("-e", json.dumps({"gpufleet_profile": "health", "probe_params": {"health": {"cuda_init": False}}, "gpufleet_gate": False}))
URL_PASSWORD = "pW9-nOtReAl"
SECRETS = {"HF_TOKEN": "hf_tEsTtOkEnNoTrEaL0123456789",
           "AWS_SECRET_ACCESS_KEY": "wJalrXUtnFEMI/K7MDENG/bPxRfiCYNOTREAL",
           # issue 45: no secret-looking name, a password in the URL
           "DATABASE_URL": "postgresql://svc:%s@db.example:5432/app" % URL_PASSWORD}


def _inventory(folder, victim_python):
    hosts = {name: {} for name in GOOD}
    hosts[VICTIM] = {"gpufleet_python": victim_python}
    return write_inventory(folder / "inventory.yml", hosts)


def _run(results, inventory, profile, env=None):
    argv = [runs.ANSIBLE_PLAYBOOK, "validate.yml", "-i", inventory, "-e", "gpufleet_results_dir=%s" % results]
    argv += list(profile)
    completed = subprocess.run(argv, cwd=runs.ROOT, capture_output=True, text=True, timeout=runs.PLAYBOOK_TIMEOUT_S,
                               env=dict(os.environ, **(env or {})), check=False)
    return completed.returncode, completed.stdout + completed.stderr


@pytest.fixture(scope="module")
def earlier_run(tmp_path_factory):
    """A results directory holding one good run of the three hosts."""
    folder = tmp_path_factory.mktemp("earlier")
    results = folder / "results"
    code, output = _run(results, _inventory(folder, sys.executable), HEALTH)
    assert code == 0, output
    return results


def _run_after_earlier(earlier_run, tmp_path, case, profile=HEALTH, env=None):
    results = tmp_path / "results"
    shutil.copytree(str(earlier_run), str(results), symlinks=True)
    (earlier_name,) = runs.run_dirs(results)
    before = runs.tree_digest(results / earlier_name)
    if case:
        python = misbehaving_python.make_interpreter(tmp_path / "python", case)
    else:
        python = str(tmp_path / "python")
        os.mkdir(python)
    code, output = _run(results, _inventory(tmp_path, python), profile, env=env)
    assert runs.tree_digest(results / earlier_name) == before, "the earlier run changed"
    (new_name,) = [name for name in runs.run_dirs(results) if name != earlier_name]
    run_dir = str(results / new_name)
    runs.assert_every_file_complete(run_dir)
    probes = ("health", "membw") if profile == runs.QUICK else ("health",)
    for name in GOOD:
        runs.assert_validated(run_dir, name, probes)
    if "membw" in probes:
        assert runs.envelope_of(run_dir, VICTIM, "membw")["status"] == "ok"  # its next probe ran for real
    return run_dir, code, output


def test_a_lone_surrogate_in_the_real_health_probes_result_is_an_error_and_its_output_is_kept(earlier_run, tmp_path):
    run_dir, code, output = _run_after_earlier(earlier_run, tmp_path, "surrogate_ifname", runs.QUICK)
    assert code == 0, output
    reason = ("the probe's result holds a string that is not clean text: data.platform.relevant_environment."
              "NCCL_SOCKET_IFNAME holds a lone surrogate U+DCFF; the raw output is kept beside the result")
    envelope = runs.envelope_of(run_dir, VICTIM, "health")
    assert envelope["status"] == "error" and envelope["reason"] == reason
    runs.assert_reported_as(run_dir, VICTIM, "error", "the health probe ended with status error: " + reason)
    with open(os.path.join(run_dir, VICTIM, "health.raw"), encoding="utf-8") as handle:
        raw = handle.read()
    assert '"NCCL_SOCKET_IFNAME": "eth\\udcff0"' in raw
    assert '"probe": "health"' in raw and '"status": ' in raw


def test_secrets_a_failing_probe_prints_never_reach_the_results_or_the_terminal(earlier_run, tmp_path):
    run_dir, code, output = _run_after_earlier(earlier_run, tmp_path, "prints_env", env=SECRETS)
    assert code == 0, output
    envelope = runs.envelope_of(run_dir, VICTIM, "health")
    assert envelope["status"] == "error"
    assert envelope["reason"] == ("the probe exited with code 1 without writing a result; last stderr lines: about to "
                                  "fail; the token was <redacted: $HF_TOKEN>; what it printed on stdout is kept beside "
                                  "the result (.raw)")
    assert any("$AWS_SECRET_ACCESS_KEY, $DATABASE_URL, $HF_TOKEN" in note for note in envelope["notes"]), envelope["notes"]
    runs.assert_reported_as(run_dir, VICTIM, "error", "the token was <redacted: $HF_TOKEN>")
    with open(os.path.join(run_dir, VICTIM, "health.raw"), encoding="utf-8") as handle:
        raw = handle.read()
    assert "HF_TOKEN=<redacted: $HF_TOKEN>\n" in raw
    assert "AWS_SECRET_ACCESS_KEY=<redacted: $AWS_SECRET_ACCESS_KEY>\n" in raw
    assert "PATH=" in raw  # the rest of what it printed is kept
    assert "DATABASE_URL=<redacted: $DATABASE_URL>\n" in raw
    for value in list(SECRETS.values()) + [URL_PASSWORD]:
        assert value not in output
        for path in runs.every_file(os.path.dirname(run_dir)):
            with open(path, "rb") as handle:
                assert value.encode() not in handle.read(), path


def test_an_interpreter_that_is_a_directory_is_named_as_one(earlier_run, tmp_path):
    run_dir, code, output = _run_after_earlier(earlier_run, tmp_path, None)
    assert code == 0, output
    folder = str(tmp_path / "python")
    reason = "the interpreter %r is a directory, not a Python interpreter" % folder
    envelope = runs.envelope_of(run_dir, VICTIM, "health")
    assert envelope["status"] == "error" and reason in envelope["reason"], envelope
    runs.assert_reported_as(run_dir, VICTIM, "error", reason)
