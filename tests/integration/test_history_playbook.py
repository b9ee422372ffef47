"""The run index through the real playbooks (issue 48, point 1): `playbooks/report.yml` updates it after writing the
run's report (and the fleet history page from it), and `playbooks/history.yml` rebuilds it from the results directory
to the very same rows.

The run is the H200 rig's recorded acceptance results replayed as three hosts (tests/unit/calibrate/calibration_runs.py).
"""
import os
import sqlite3
import subprocess
import sys

import yaml
from test_validate_playbook import ANSIBLE_PLAYBOOK, ROOT  # pylint: disable=import-error

sys.path.insert(0, os.path.join(ROOT, "tests", "unit", "calibrate"))
from calibration_runs import RUN_ID, store_run  # noqa: E402  pylint: disable=import-error,wrong-import-position

HOSTS = ("node-a", "node-b", "node-c")
TABLES = ("meta", "runs", "hosts", "causes", "gpus", "metrics", "settings", "slurm_actions")


def playbook(tmp_path, name, *extra):
    inventory = tmp_path / "inventory.yml"
    inventory.write_text(yaml.safe_dump({"all": {"vars": {"gpufleet_rule_overrides": {"health.gpu_count": {"params": {"expected": 1}}}},
                                                 "hosts": {host: {} for host in HOSTS}}}))
    argv = [ANSIBLE_PLAYBOOK, os.path.join("playbooks", name), "-i", str(inventory), "-e", "gpufleet_results_dir=%s" % (tmp_path / "results")]
    completed = subprocess.run(argv + list(extra), cwd=ROOT, capture_output=True, text=True, timeout=300, check=False)
    return completed.returncode, completed.stdout + completed.stderr


def rows(tmp_path):
    connection = sqlite3.connect(str(tmp_path / "results" / ".gpufleet-history.sqlite3"))
    try:
        return {table: sorted(connection.execute("SELECT * FROM %s" % table).fetchall(), key=repr) for table in TABLES}
    finally:
        connection.close()


def test_the_report_updates_the_index_and_the_history_playbook_rebuilds_it_the_same(tmp_path):
    store_run(tmp_path / "results", HOSTS)
    rc, output = playbook(tmp_path, "report.yml", "-e", "gpufleet_run_id=%s" % RUN_ID, "-e", "gpufleet_hosts=all", "-e", "gpufleet_gate=false")
    assert rc == 0, output
    assert "run index" not in output and "fleet history page" not in output  # no warning about either
    page = (tmp_path / "results" / "history.html").read_text(encoding="utf-8")  # written by the report after the index
    assert '<a href="%s/index.html">%s</a>' % (RUN_ID, RUN_ID) in page and "3 hosts" in page
    incremental = rows(tmp_path)
    assert [row[0] for row in incremental["runs"]] == [RUN_ID]
    assert sorted(row[1] for row in incremental["hosts"]) == list(HOSTS)
    assert {row[2].split(".")[0] for row in incremental["metrics"]} >= {"membw", "gemm", "hostbw", "health"}
    assert sorted(row[1] for row in incremental["gpus"]) == list(HOSTS)  # each replayed host has its one GPU, its own UUID

    rc, output = playbook(tmp_path, "history.yml")
    assert rc == 0, output
    assert "1 run(s) indexed, 1 read by this task, 0 dropped" in output
    assert rows(tmp_path) == incremental
