"""A run always ends: a host whose sshd accepts, sends its banner and then says nothing (a wedged sshd, a real listener
in the test fleet) costs that host, over ssh and over paramiko. The real `ansible-playbook validate.yml`; the run ends
well inside its bound, the wedged host is `unreachable` with the stage it stalled in, and the other host's results,
dossiers and the fleet's index, fleet.json and junit.xml are written (docs/connections.md, "Deadlines").
"""
import json
import os
import signal
import subprocess
import sys
import time

FAULTS_DIR = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "fleet")
if FAULTS_DIR not in sys.path:
    sys.path.insert(0, FAULTS_DIR)

from faults import runs  # noqa: E402  pylint: disable=wrong-import-position

HEALTH = ("-e", json.dumps({"gpufleet_profile": "health", "probe_params": {"health": {"cuda_init": False}}}))
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

    code, output, took = _run(fleet, tmp_path / "ssh", fleet.inventory_path)
    print("ssh: the run with a wedged sshd took %.1f s" % took)
    _assert_the_wedged_host_cost_only_itself(tmp_path / "ssh", good, wedged, code, output)
    assert "timed out" in runs.envelope_of(str(tmp_path / "ssh" / "wedged"), wedged, "health")["reason"]

    code, output, took = _run(fleet, tmp_path / "paramiko", fleet.paramiko_inventory_path, env=fleet.paramiko_env())
    print("paramiko: the run with a wedged sshd took %.1f s" % took)
    _assert_the_wedged_host_cost_only_itself(tmp_path / "paramiko", good, wedged, code, output)
