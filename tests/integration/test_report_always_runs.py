"""The report always runs (issue 45, point 3), through the real `ansible-playbook validate.yml` against two hosts
that are this machine, their results on a file system of their own (a tmpfs) that turns read-only while they probe.

The red team's row: results on a file system that turns read-only after health was stored, on every host: each
host's next probe said "write failed: EROFS ... (the report says so)", every host's probe task failed, Ansible ended
the playbook, and the report never ran, not even when the file system was writable again: rc 2 and no index.

Each host's gpufleet_python is a wrapper (written here, argv only, no shell) that remounts the results' file system
read-only before the probe tuning: tuning's result cannot be stored, nor fabric's inputs after it. Root only (mount);
skipped where this machine cannot mount a tmpfs.
"""
import json
import os
import subprocess
import sys

import pytest

from test_bad_input import write_inventory  # pylint: disable=import-error

HERE = os.path.dirname(os.path.abspath(__file__))
if os.path.join(os.path.dirname(HERE), "fleet") not in sys.path:
    sys.path.insert(0, os.path.join(os.path.dirname(HERE), "fleet"))

from faults import runs  # noqa: E402  pylint: disable=wrong-import-position

HOSTS = ("node-a", "node-b")
PROFILE = {"gpufleet_profile": "stores", "gpufleet_profiles": {"stores": ["health", "tuning", "fabric"]},
           "probe_params": {"health": {"cuda_init": False}}, "gpufleet_gate": False}
WRAPPER = '''#!{python}
"""Remount the results' file system as the probe about to run needs it, then run the real Python."""
import os
import subprocess
import sys

probe = os.path.basename(sys.argv[1]) if len(sys.argv) > 1 else ""
mode = {modes!r}.get(probe)
if mode:
    subprocess.run(["mount", "-o", mode, {mount!r}], check=True)
os.execv({python!r}, [{python!r}] + sys.argv[1:])
'''


@pytest.fixture
def results_mount(tmp_path):
    mount = tmp_path / "results"
    mount.mkdir()
    done = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=64m", "tmpfs", str(mount)], capture_output=True, text=True,
                          check=False)
    if done.returncode != 0:
        pytest.skip("cannot mount a tmpfs here: %s" % done.stderr.strip())
    yield mount
    subprocess.run(["umount", "-l", str(mount)], check=False)


def _wrapper(tmp_path, mount):
    path = tmp_path / "remounting_python"
    path.write_text(WRAPPER.format(python=sys.executable, mount=str(mount), modes={"tuning.py": "remount,ro"}))
    path.chmod(0o755)
    return str(path)


def _validate(tmp_path, mount, python):
    inventory = write_inventory(tmp_path / "inventory.yml", {host: {"gpufleet_python": python} for host in HOSTS})
    argv = [runs.ANSIBLE_PLAYBOOK, "validate.yml", "-i", inventory, "-e", "gpufleet_results_dir=%s" % mount,
            "-e", "gpufleet_run_id=R1", "-e", json.dumps(PROFILE)]
    completed = subprocess.run(argv, cwd=runs.ROOT, capture_output=True, text=True, timeout=runs.PLAYBOOK_TIMEOUT_S, check=False)
    return completed.returncode, completed.stdout + completed.stderr


def test_every_host_failing_a_write_still_gets_the_report_which_names_why_it_cannot_write(tmp_path, results_mount):
    """The file system turns read-only before tuning on every host and stays so: every host's probes stop (tuning's
    result and fabric's inputs cannot be stored), yet no host is left failed before the report; the report runs,
    says it could not write and why, and the run exits 2."""
    code, output = _validate(tmp_path, results_mount, _wrapper(tmp_path, results_mount))
    flat = " ".join(output.split())
    assert code == 2, output
    for host in HOSTS:
        assert "%s: write failed: EROFS Read-only file system: the result of probe tuning for %s" % (host, host) in flat, output
        assert "probe fabric was not run on %s: its result could not be stored" % host in flat
    assert "NO MORE HOSTS LEFT" not in flat
    after_probes = flat.split("Judge the run and render the reports", 1)
    assert len(after_probes) == 2, "the report play ran"
    assert "could not write index.html: OSError: [Errno 30] Read-only file system" in after_probes[1], output
    assert not (results_mount / "R1" / "index.html").exists()

    # writable again: the report of the stored run names what each host could not store
    subprocess.run(["mount", "-o", "remount,rw", str(results_mount)], check=True)
    argv = [runs.ANSIBLE_PLAYBOOK, "playbooks/report.yml", "-e", "gpufleet_run_id=R1", "-e", "gpufleet_results_dir=%s" % results_mount,
            "-e", "gpufleet_gate=false"]
    completed = subprocess.run(argv, cwd=runs.ROOT, capture_output=True, text=True, timeout=runs.PLAYBOOK_TIMEOUT_S, check=False)
    assert completed.returncode == 0, completed.stdout + completed.stderr
    for host in HOSTS:
        assert (results_mount / "R1" / host / "health.json").is_file() and (results_mount / "R1" / host / "dossier.html").is_file()
    assert (results_mount / "R1" / "index.html").is_file()
