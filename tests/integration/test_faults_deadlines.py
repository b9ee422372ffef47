"""A run always ends: a host whose sshd accepts, sends its banner and then says nothing (a wedged sshd, a real listener
in the test fleet) costs that host, over ssh and over paramiko. The real `ansible-playbook validate.yml`; the run ends
well inside its bound, the wedged host is `unreachable` with the stage it stalled in, and the other host's results,
dossiers and the fleet's index, fleet.json and junit.xml are written (docs/connections.md, "Deadlines").
"""
import json
import os
import signal
import socket
import subprocess
import sys
import time

import pytest

FAULTS_DIR = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "fleet")
if FAULTS_DIR not in sys.path:
    sys.path.insert(0, FAULTS_DIR)

from faults import runs  # noqa: E402  pylint: disable=wrong-import-position

# Report only (gpufleet_gate: false): a CPU host proves no headline (issue 44), so only the host not reached fails the run.
HEALTH = ("-e", json.dumps({"gpufleet_profile": "health", "probe_params": {"health": {"cuda_init": False}}, "gpufleet_gate": False}))
# ssh: the keepalives end a silent server after 10 s x 3 (plugins/plugin_utils/host_deadlines.py); paramiko: its 10 s
# timeout. The healthy host's run takes 10-20 s on the test machine; before the deadlines the run never ended.
RUN_BOUND_S = 150
STAGE = "stage: connecting to the host and starting the probe"


def _run(fleet, results, inventory, env=None):
    argv = runs.validate_argv(fleet, results, *HEALTH, run_id="wedged")
    argv[argv.index(fleet.inventory_path)] = inventory
    started = time.monotonic()
    process = subprocess.Popen(argv, cwd=runs.ROOT, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env,
                               start_new_session=True)
    try:
        output = process.communicate(timeout=RUN_BOUND_S)[0]
    except subprocess.TimeoutExpired as exc:
        os.killpg(process.pid, signal.SIGKILL)  # the playbook, its workers and their ssh clients
        output = process.communicate()[0]
        raise AssertionError("the run did not end within %d s: %s" % (RUN_BOUND_S, output[-3000:])) from exc
    return process.returncode, output, time.monotonic() - started


def _assert_the_wedged_host_cost_only_itself(results, good, wedged, code, output):
    assert code == 2, output  # a host was not reached (docs/reports.md)
    run_dir = str(results / "wedged")
    runs.assert_every_file_complete(run_dir)
    runs.assert_validated(run_dir, good, probes=("health",))
    envelope = runs.envelope_of(run_dir, wedged, "health")
    assert envelope["status"] == "unreachable", envelope
    assert STAGE in envelope["reason"], envelope["reason"]
    runs.assert_reported_as(run_dir, wedged, "unreachable", STAGE)
    for name in ("index.html", "index.md", "fleet.json", "junit.xml"):
        assert os.path.getsize(os.path.join(run_dir, name)) > 0, name
    assert os.path.getsize(os.path.join(run_dir, wedged, "dossier.html")) > 0


def test_a_wedged_sshd_costs_that_host_over_ssh_and_paramiko(netns_fleet, tmp_path):
    fleet = netns_fleet(hosts=2, prefix="fxwdg")
    good, wedged = fleet.names
    fleet.wedge_sshd(wedged)
    with socket.create_connection((fleet.host(wedged)["address"], 22), timeout=5) as wedge:
        assert wedge.recv(64) == b"SSH-2.0-OpenSSH_9.0\r\n"  # the banner, then nothing
        wedge.settimeout(1.0)
        with pytest.raises(socket.timeout):
            wedge.recv(64)

    code, output, took = _run(fleet, tmp_path / "ssh", fleet.inventory_path)
    print("ssh: the run with a wedged sshd took %.1f s" % took)
    _assert_the_wedged_host_cost_only_itself(tmp_path / "ssh", good, wedged, code, output)
    assert "timed out" in runs.envelope_of(str(tmp_path / "ssh" / "wedged"), wedged, "health")["reason"]

    code, output, took = _run(fleet, tmp_path / "paramiko", fleet.paramiko_inventory_path, env=fleet.paramiko_env())
    print("paramiko: the run with a wedged sshd took %.1f s" % took)
    _assert_the_wedged_host_cost_only_itself(tmp_path / "paramiko", good, wedged, code, output)


def _children(pid):
    children = []
    for entry in os.listdir("/proc"):
        try:
            with open("/proc/%s/stat" % entry) as handle:
                fields = handle.read().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if entry.isdigit() and int(fields[1]) == pid and fields[0] not in ("Z", "X"):
            children.append(int(entry))
    return sorted(children)


@pytest.mark.parametrize("forks", [1, 64])
def test_a_controller_worker_that_dies_costs_its_host_not_the_run(tmp_path, forks):
    """forks 64: the worker dies while the run waits for the task's results; forks 1: while the other host waits for its
    slot (linear would start it in the dead worker's slot and wait for the dead one's result for ever)."""
    from test_bad_input import write_inventory  # pylint: disable=import-error,import-outside-toplevel
    hosts = ("gpu-a01", "gpu-a02")
    results = tmp_path / "results"
    inventory = write_inventory(tmp_path / "inventory.yml", {name: {} for name in hosts})
    slow = runs.SLOW_MEMBW
    run = runs.BackgroundRun([runs.ANSIBLE_PLAYBOOK, "validate.yml", "-i", inventory, "-e", "gpufleet_results_dir=%s" % results,
                              "-e", "gpufleet_run_id=worker", "--forks", str(forks), *slow], tmp_path / "run.log")
    try:
        # Every running worker past its health probe, so that each is at membw: both with 64 forks, the first with 1.
        runs.wait_for(lambda: len([name for name in hosts if os.path.exists(results / "worker" / name / "health.json")])
                      >= min(forks, len(hosts)), "the running hosts' health results", run=run)
        workers = runs.wait_for(lambda: _children(run.process.pid), "the probe task's workers", run=run)
        os.kill(workers[0], signal.SIGKILL)  # as the out-of-memory killer would
        code, output = run.wait(timeout_s=RUN_BOUND_S)
    finally:
        run.kill()
    assert "A worker was found in a dead state" not in output, output
    assert code == 2, output
    run_dir = str(results / "worker")
    runs.assert_every_file_complete(run_dir)
    lost = [name for name in hosts if runs.fleet_host(run_dir, name)["verdict"] == "unreachable"]
    assert len(lost) == 1, [runs.fleet_host(run_dir, name) for name in hosts]
    survivor = [name for name in hosts if name not in lost][0]
    runs.assert_validated(run_dir, survivor)
    membw = runs.envelope_of(run_dir, lost[0], "membw")
    assert membw["status"] == "unreachable", membw
    assert "the controller's worker process for this host died (killed by SIGKILL)" in membw["reason"], membw["reason"]
    assert "the controller's worker process for %s died (killed by SIGKILL)" % lost[0] in output, output
    runs.assert_reported_as(run_dir, lost[0], "unreachable", "membw: the controller's worker process for this host died")
    for name in ("index.html", "fleet.json", "junit.xml"):
        assert os.path.getsize(os.path.join(run_dir, name)) > 0, name
