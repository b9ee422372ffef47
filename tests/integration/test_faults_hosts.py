"""Faults of hosts and of the controller, each with the real `ansible-playbook validate.yml` against a test fleet of
network namespaces with their own sshd (tests/fleet/netns_fleet.py), then the reports read back.

A host unreachable from the start; a host whose sshd (and every session) is killed while a probe runs there; a results
directory that cannot be written; a run interrupted on the controller and started again. For each: the other hosts are
validated in full, the faulty host is in the reports with its status and a reason a person can act on, every result
file is complete, and the exit code says what happened (docs/reports.md: 2 when a host was not reached).
"""
import os
import signal
import sys

FAULTS_DIR = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "fleet")
if FAULTS_DIR not in sys.path:
    sys.path.insert(0, FAULTS_DIR)

from faults import runs  # noqa: E402  pylint: disable=wrong-import-position
from test_validate_playbook import assert_console_names_the_unreachable_host_once  # noqa: E402  pylint: disable=import-error

QUICK = runs.QUICK


def _not_reached_line(*hosts):
    return "%d host(s) could not be validated because they were not reached: %s." % (len(hosts), ", ".join(hosts))


def test_a_host_unreachable_from_the_start_is_reported_and_the_others_are_validated(netns_fleet, tmp_path):
    fleet = netns_fleet(hosts=2, unreachable=1, prefix="fxunr")
    good_hosts, ghost = fleet.names[:2], fleet.names[2]
    results = tmp_path / "results"
    code, output = runs.run_validate(fleet, results, *QUICK)
    assert code == 2, output
    assert _not_reached_line(ghost) in output
    assert_console_names_the_unreachable_host_once(output, ghost, good_hosts, "could not be reached")
    run_dir = runs.only_run_dir(results)
    runs.assert_every_file_complete(run_dir)
    for name in good_hosts:
        runs.assert_validated(run_dir, name)
    envelope = runs.envelope_of(run_dir, ghost, "health")
    assert envelope["status"] == "unreachable"
    assert "could not be reached" in envelope["reason"] and "ansible -m ansible.builtin.ping %s" % ghost in envelope["reason"]
    assert "No route to host" in envelope["reason"] or "timed out" in envelope["reason"], envelope["reason"]
    assert not os.path.exists(os.path.join(run_dir, ghost, "membw.json"))  # its remaining probes were not attempted
    runs.assert_reported_as(run_dir, ghost, "unreachable", "could not be reached")
    assert os.path.exists(os.path.join(run_dir, ghost, "dossier.html"))


def test_a_host_whose_sshd_dies_mid_run_is_reported_and_the_others_are_validated(netns_fleet, tmp_path):
    fleet = netns_fleet(hosts=2, prefix="fxsshd")
    survivor, victim = fleet.names
    results = tmp_path / "results"
    run = runs.BackgroundRun(runs.validate_argv(fleet, results, *QUICK, run_id="sshd-dies"), tmp_path / "run.log")
    try:
        # The victim's first probe is stored and its second one runs: kill its sshd and every session (the probe too).
        runs.wait_for(lambda: os.path.exists(results / "sshd-dies" / victim / "health.json"), "the victim's health result", run=run)
        runs.wait_for(lambda: runs.host_processes(fleet, victim, "membw.py"), "membw running on the victim", run=run)
        fleet.kill_sshd(victim, sessions=True)
        code, output = run.wait()
    finally:
        run.kill()
    assert code == 2, output
    assert _not_reached_line(victim) in output
    assert_console_names_the_unreachable_host_once(output, victim, [survivor], "the connection to the host was lost")
    run_dir = str(results / "sshd-dies")
    runs.assert_every_file_complete(run_dir)
    runs.assert_validated(run_dir, survivor)
    assert runs.envelope_of(run_dir, victim, "health")["status"] in runs.GOOD_STATUSES["health"]  # kept, whole
    membw = runs.envelope_of(run_dir, victim, "membw")
    assert membw["status"] == "unreachable", membw
    # Lost while its job was being started (the answer that it started never came back) or while it was waited for.
    assert "the connection to the host was lost" in membw["reason"]
    assert "after the probe started" in membw["reason"] or "while the probe was being started" in membw["reason"]
    assert "ansible -m ansible.builtin.ping %s" % victim in membw["reason"]
    runs.assert_reported_as(run_dir, victim, "unreachable", "membw: the connection to the host was lost")
    assert not runs.host_processes(fleet, victim, "gpufleet-probe")  # the probe died with the sessions


def test_a_results_directory_that_cannot_be_written_fails_the_run_before_any_probe_runs(netns_fleet, tmp_path):
    fleet = netns_fleet(hosts=2, prefix="fxrdir")
    blocker = tmp_path / "afile"
    blocker.write_text("a file where the results directory should be\n")
    results = blocker / "results"  # ENOTDIR, for root too (chmod would not stop root)
    before = runs.tree_digest(tmp_path)
    code, output = runs.run_validate(fleet, results, *QUICK)
    assert code == 2, output
    # The run is opened (gpufleet.validation.open_run) before any host is contacted: it stops there, once.
    assert "was not started: its results could not be stored in %s" % results in output, output
    assert "set gpufleet_results_dir to a directory this user can write" in output
    assert "TASK [gpufleet.validation.probe" not in output
    assert "Not a directory" in output
    assert "probe membw still running" not in output and "probe health still running" not in output
    assert runs.tree_digest(tmp_path) == before  # nothing written beside it


def test_an_interrupted_run_keeps_its_files_and_the_next_run_is_complete(netns_fleet, tmp_path):
    fleet = netns_fleet(hosts=2, prefix="fxintr")
    results = tmp_path / "results"
    first = results / "interrupted"
    run = runs.BackgroundRun(runs.validate_argv(fleet, results, *QUICK, run_id="interrupted"), tmp_path / "first.log")
    try:
        # Interrupt (Ctrl-C: SIGINT to the whole process group) once a result is stored and the next probe runs.
        runs.wait_for(lambda: [name for name in fleet.names if os.path.exists(first / name / "health.json")],
                      "a health result", run=run)
        runs.wait_for(lambda: [name for name in fleet.names if runs.host_processes(fleet, name, "membw.py")],
                      "membw running on a host", run=run)
        run.signal_group(signal.SIGINT)
        code, output = run.wait(timeout_s=120)
    finally:
        run.kill()
    assert code == 99, output  # ansible-playbook's code for an interrupted run
    assert "User interrupted execution" in output
    runs.assert_every_file_complete(first)
    stored = [path for path in runs.every_file(first) if runs.is_probe_result(path, first)]
    assert stored, "the interrupted run stored nothing"
    for path in stored:
        host, probe = os.path.relpath(path, first)[:-len(".json")].split(os.sep)
        assert runs.envelope_of(first, host, probe)["status"] in runs.GOOD_STATUSES[probe]
    digest_before = runs.tree_digest(first)

    code, output = runs.run_validate(fleet, results, *QUICK)
    assert code == 0, output
    second = [name for name in runs.run_dirs(results) if name != "interrupted"]
    assert len(second) == 1, runs.run_dirs(results)
    run_dir = os.path.join(str(results), second[0])
    runs.assert_every_file_complete(run_dir)
    for name in fleet.names:
        runs.assert_validated(run_dir, name)
    assert os.readlink(results / "latest") == second[0]
    assert runs.tree_digest(first) == digest_before  # the interrupted run's files are untouched
