"""The run directory against a hostile or unlucky user, with the real `ansible-playbook validate.yml` (docs/store.md).

Links planted in the results tree, a reused or reserved run id, two playbook runs of one run id at once, a host name
too long for a file name. For each: the exit code, the affected host's status and reason, every other host validated,
and no earlier file changed (sha256 of every file before and after).
"""
import json
import os
import subprocess
import sys
import time

from test_bad_input import NO_CUDA_INIT, write_inventory  # pylint: disable=import-error
from test_validate_playbook import ANSIBLE_PLAYBOOK, ROOT, run_playbook  # pylint: disable=import-error

FAULTS_DIR = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "fleet")
if FAULTS_DIR not in sys.path:
    sys.path.insert(0, FAULTS_DIR)

from faults import runs  # noqa: E402  pylint: disable=wrong-import-position

# Report only (gpufleet_gate: false): the gate refuses every host of a CPU machine (issue 44); the exit codes these
# tests read are the store's own refusals.
HEALTH = ("-e", json.dumps({"gpufleet_profile": "health", "probe_params": NO_CUDA_INIT, "gpufleet_gate": False}))
REPORT_ONLY = ("-e", "gpufleet_gate=false")
# Slow enough that a second playbook run can start while the first still holds its host.
SLOW_QUICK = runs.SLOW_MEMBW
RESUME = ("-e", "gpufleet_resume=true")


def two_local_hosts(tmp_path, **extra):
    hosts = {"gpu-a01": {}, "gpu-a02": {}}
    hosts.update(extra)
    return write_inventory(tmp_path / "inventory.yml", hosts)


def fleet_hosts(run_dir):
    return runs.load_json(os.path.join(run_dir, "fleet.json"))["hosts"]


def test_a_host_directory_that_is_a_link_is_not_written_through(tmp_path):
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "health.json").write_text("precious\n")
    before = runs.tree_digest(outside)
    results = tmp_path / "results"
    (results / "planted").mkdir(parents=True)
    os.symlink(str(outside), str(results / "planted" / "gpu-a01"))
    code, output = run_playbook(results, "-i", two_local_hosts(tmp_path), *HEALTH, *RESUME, "-e", "gpufleet_run_id=planted")
    assert code == 2, output
    assert runs.tree_digest(outside) == before
    assert "planted/gpu-a01 is a symbolic link (to %s)" % outside in output
    run_dir = str(results / "planted")
    runs.assert_validated(run_dir, "gpu-a02", probes=("health",))
    verdicts = fleet_hosts(run_dir)
    assert verdicts["gpu-a01"]["verdict"] in ("error", "fail"), verdicts["gpu-a01"]
    assert any("is a symbolic link" in reason for reason in verdicts["gpu-a01"]["reasons"]), verdicts["gpu-a01"]
    assert os.path.islink(os.path.join(run_dir, "gpu-a01")) and os.path.isfile(os.path.join(run_dir, "index.html"))


def test_a_run_directory_that_is_a_link_is_refused_and_its_target_untouched(tmp_path):
    target = tmp_path / "elsewhere"
    target.mkdir()
    (target / "index.html").write_text("<p>someone else's</p>\n")
    before = runs.tree_digest(target)
    results = tmp_path / "results"
    results.mkdir()
    os.symlink(str(target), str(results / "linked"))
    for extra in ((), RESUME):
        code, output = run_playbook(results, *HEALTH, *extra, "-e", "gpufleet_run_id=linked")
        assert code == 2, output
        assert "run linked was not started: %s is a symbolic link (to %s)" % (results / "linked", target) in output
        assert "TASK [gpufleet.validation.probe" not in output
    assert runs.tree_digest(target) == before
    assert os.listdir(results) == ["linked"]


def test_latest_and_a_reused_run_id_are_refused_and_the_earlier_run_is_unchanged(tmp_path):
    results = tmp_path / "results"
    code, output = run_playbook(results, *HEALTH, "-e", "gpufleet_run_id=first")
    assert code == 0, output
    before = runs.tree_digest(results / "first")
    code, output = run_playbook(results, *HEALTH, "-e", "gpufleet_run_id=latest")
    assert code == 2 and "the link to the newest run, not a run id" in output, output
    code, output = run_playbook(results, *HEALTH, "-e", "gpufleet_run_id=first")
    assert code == 2, output
    assert "run id first already names a run in %s, so nothing was written" % results in output
    assert "TASK [gpufleet.validation.probe" not in output
    assert runs.tree_digest(results / "first") == before
    assert os.readlink(results / "latest") == "first"


def test_resuming_a_run_records_the_second_writer_and_keeps_the_first_runs_hosts(tmp_path):
    results = tmp_path / "results"
    inventory = two_local_hosts(tmp_path)
    code, output = run_playbook(results, "-i", inventory, "--limit", "gpu-a01", *HEALTH, "-e", "gpufleet_run_id=grow")
    assert code == 0, output
    kept = runs.tree_digest(results / "grow" / "gpu-a01")
    code, output = run_playbook(results, "-i", inventory, "--limit", "gpu-a02", *HEALTH, *RESUME,
                                "-e", "gpufleet_run_id=grow")
    assert code == 0, output
    record = runs.load_json(str(results / "grow" / "run.json"))
    assert [writer["limit"] for writer in record["writers"]] == ["gpu-a01", "gpu-a02"]
    assert [writer["resume"] for writer in record["writers"]] == [False, True]
    assert {name: digest for name, digest in runs.tree_digest(results / "grow" / "gpu-a01").items()
            if name.endswith(".json")} == {name: digest for name, digest in kept.items() if name.endswith(".json")}
    # --limit leaves out the implicit localhost, so neither run reported: the report of both is one more command.
    completed = subprocess.run([ANSIBLE_PLAYBOOK, "playbooks/report.yml", "-e", "gpufleet_results_dir=%s" % results,
                                "-e", "gpufleet_run_id=grow", *REPORT_ONLY], cwd=ROOT, capture_output=True, text=True, timeout=300,
                               check=False)
    assert completed.returncode == 0, completed.stdout + completed.stderr
    assert set(fleet_hosts(str(results / "grow"))) == {"gpu-a01", "gpu-a02"}


def test_a_second_playbook_run_of_the_same_run_id_at_once_is_refused(tmp_path):
    results = tmp_path / "results"
    inventory = two_local_hosts(tmp_path)
    argv = [ANSIBLE_PLAYBOOK, "validate.yml", "-i", inventory, "-e", "gpufleet_results_dir=%s" % results,
            "-e", "gpufleet_run_id=twice", *SLOW_QUICK]
    first = runs.BackgroundRun(argv, tmp_path / "first.log")
    try:
        runs.wait_for(lambda: os.path.exists(results / "twice" / "gpu-a01" / "writer.json"), "the first run's claim",
                      run=first)
        code, output = run_playbook(results, "-i", inventory, *SLOW_QUICK, "-e", "gpufleet_run_id=twice")
        assert code == 2 and "run id twice already names a run" in output, output
        code, output = run_playbook(results, "-i", inventory, *SLOW_QUICK, *RESUME, "-e", "gpufleet_run_id=twice")
        assert first.running, "the first run ended before the second could be refused: make SLOW_QUICK slower"
        assert code == 2, output
        assert "gpu-a01's results in this run are being written by another playbook run" in output, output
        code, output = first.wait()
    finally:
        first.kill()
    assert code == 0, output
    run_dir = str(results / "twice")
    record = runs.load_json(os.path.join(run_dir, "run.json"))
    first_writer = record["writers"][0]["writer_id"]
    for host in ("gpu-a01", "gpu-a02"):
        assert runs.load_json(os.path.join(run_dir, host, "writer.json"))["writer_id"] == first_writer
        runs.assert_validated(run_dir, host)
    assert len(record["writers"]) == 2  # the first, and the resuming one that was refused every host


def test_a_300_character_host_name_is_stored_under_a_bounded_name_and_reported(tmp_path):
    long_name = "gpu-" + "a" * 296
    results = tmp_path / "results"
    inventory = write_inventory(tmp_path / "inventory.yml", {long_name: {}, "gpu-a02": {}})
    started = time.monotonic()
    code, output = run_playbook(results, "-i", inventory, *HEALTH, "-e", "gpufleet_run_id=long")
    assert code == 0, (output, time.monotonic() - started)
    run_dir = str(results / "long")
    names = sorted(os.listdir(run_dir))
    (hashed,) = [name for name in names if name.startswith("gpu-aaaa")]
    assert len(hashed) <= 120 and "~" in hashed
    assert runs.load_json(os.path.join(run_dir, hashed, "inputs.json"))["host"] == long_name
    for name in ("index.html", "index.md", "fleet.json", "junit.xml", "gpufleet.prom"):
        assert name in names, names
    assert set(fleet_hosts(run_dir)) == {long_name, "gpu-a02"}
    with open(os.path.join(run_dir, hashed, "dossier.md"), encoding="utf-8") as handle:
        assert long_name in handle.read()


def test_a_stray_directory_without_stored_inputs_is_listed_not_judged(tmp_path):
    results = tmp_path / "results"
    code, output = run_playbook(results, *HEALTH, "-e", "gpufleet_run_id=stray")
    assert code == 0, output
    (results / "stray" / "dropped-in").mkdir()
    (results / "stray" / "dropped-in" / "health.json").write_text("{}")
    completed = subprocess.run([ANSIBLE_PLAYBOOK, "playbooks/report.yml", "-e", "gpufleet_results_dir=%s" % results,
                                "-e", "gpufleet_run_id=stray", *REPORT_ONLY], cwd=ROOT, capture_output=True, text=True, timeout=300,
                               check=False)
    output = completed.stdout + completed.stderr
    assert completed.returncode == 0, output
    assert "dropped-in in run stray: not judged: no inputs.json" in output
    assert set(fleet_hosts(str(results / "stray"))) == {"localhost"}
