"""kill -9 of a playbook run, then the same run id with gpufleet_resume=true (docs/store.md, "Resuming after a killed
writer"): the resume says the earlier writer is gone, keeps every result it finished byte for byte, and probes only
what has no result. The real `ansible-playbook validate.yml` on two local-connection hosts.
"""
import os
import signal
import sys

from test_bad_input import write_inventory  # pylint: disable=import-error
from test_validate_playbook import ANSIBLE_PLAYBOOK, run_playbook  # pylint: disable=import-error

FAULTS_DIR = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "fleet")
if FAULTS_DIR not in sys.path:
    sys.path.insert(0, FAULTS_DIR)

from faults import runs  # noqa: E402  pylint: disable=wrong-import-position

SLOW_QUICK = runs.SLOW_MEMBW
HOSTS = ("gpu-a01", "gpu-a02")


def _results_of(run_dir):
    return {path: digest for path, digest in runs.tree_digest(run_dir).items()
            if runs.is_probe_result(os.path.join(run_dir, path), run_dir)}


def test_a_resume_after_a_killed_writer_says_so_and_keeps_what_it_finished(tmp_path):
    results = tmp_path / "results"
    inventory = write_inventory(tmp_path / "inventory.yml", {name: {} for name in HOSTS})
    argv = [ANSIBLE_PLAYBOOK, "validate.yml", "-i", inventory, "-e", "gpufleet_results_dir=%s" % results,
            "-e", "gpufleet_run_id=killed", *SLOW_QUICK]
    run = runs.BackgroundRun(argv, tmp_path / "killed.log")
    try:
        runs.wait_for(lambda: all(os.path.exists(results / "killed" / name / "health.json") for name in HOSTS),
                      "both hosts' health results", run=run)
        killed_pid = run.process.pid
        run.signal_group(signal.SIGKILL)  # kill -9 of the playbook, its workers with it
        run.process.wait(timeout=30)
    finally:
        run.kill()
    finished = _results_of(results / "killed")
    assert finished, "the killed run finished nothing"
    assert len(finished) < 2 * len(HOSTS), "the killed run finished everything: kill it earlier"

    code, output = run_playbook(results, "-i", inventory, *SLOW_QUICK, "-e", "gpufleet_run_id=killed",
                                "-e", "gpufleet_resume=true")
    assert code == 0, output
    writer = runs.load_json(str(results / "killed" / "run.json"))["writers"][0]
    assert writer["pid"] == killed_pid
    assert "the writer of run killed (pid %d on %s, started %s) is gone" % (
        killed_pid, writer["controller"], writer["started"]) in output, output
    now = _results_of(results / "killed")
    assert {path: now[path] for path in finished} == finished  # not one finished result rewritten
    for path in finished:
        host, probe = path[:-len(".json")].split(os.sep)
        assert "%s: probe %s kept: its result" % (host, probe) in output, (path, output)
    for name in HOSTS:
        runs.assert_validated(str(results / "killed"), name)
