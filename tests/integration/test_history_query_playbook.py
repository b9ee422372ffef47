"""The run index's queries through the real playbook (issue 48, point 4): `playbooks/history_query.yml` answers a
host's metric over time, writes it to the dest file atomically and prints it, the same rows as history/queries gives;
a query the index cannot answer fails saying why.

The runs are the H200 rig's recorded acceptance results replayed as two hosts (tests/unit/calibrate/calibration_runs.py),
two nights, node-a's HBM bandwidth 2 % lower the second; judged and reported in-process as the report action does.
"""
import csv
import io
import os
import subprocess
import sys

from test_validate_playbook import ANSIBLE_PLAYBOOK, ROOT  # pylint: disable=import-error

sys.path.insert(0, os.path.join(ROOT, "tests", "unit", "calibrate"))
from calibration_runs import RUN_ID, store_run  # noqa: E402  pylint: disable=import-error,wrong-import-position

from ansible_collections.gpufleet.validation.plugins.plugin_utils.history.index import update_index  # noqa: E402
from ansible_collections.gpufleet.validation.plugins.plugin_utils.history.queries import METRIC_COLUMNS, run_query  # noqa: E402
from ansible_collections.gpufleet.validation.plugins.plugin_utils.history.query_output import query_text  # noqa: E402
from ansible_collections.gpufleet.validation.plugins.plugin_utils.report.render import render_run  # noqa: E402
from ansible_collections.gpufleet.validation.plugins.plugin_utils.run_judgement import judge_run  # noqa: E402
from ansible_collections.gpufleet.validation.plugins.plugin_utils.store.atomic import text_writer_below  # noqa: E402
from ansible_collections.gpufleet.validation.plugins.plugin_utils.store.stored_run import load_run  # noqa: E402

HOSTS = ("node-a", "node-b")
SECOND_RUN_ID = "20261202T090639Z-551804"


def reported(results):
    for run_id, scale in ((RUN_ID, None), (SECOND_RUN_ID, {"node-a": {"membw": 0.98}})):
        path = store_run(results, HOSTS, run_id=run_id, scale=scale)
        run = load_run(path, list(HOSTS), {})
        render_run(path, list(HOSTS), {}, text_writer_below(str(results)), judgement=judge_run(run, str(results), {}), loaded=run, workers=1)
    assert not update_index(str(results)).problems


def playbook(tmp_path, *extra):
    argv = [ANSIBLE_PLAYBOOK, os.path.join("playbooks", "history_query.yml"), "-e", "gpufleet_results_dir=%s" % (tmp_path / "results")]
    completed = subprocess.run(argv + list(extra), cwd=ROOT, capture_output=True, text=True, timeout=300, check=False)
    return completed.returncode, completed.stdout + completed.stderr


def test_the_playbook_writes_and_prints_a_hosts_metric_over_time(tmp_path):
    reported(tmp_path / "results")
    dest = tmp_path / "answers" / "node-a-membw.csv"
    dest.parent.mkdir()
    rc, output = playbook(tmp_path, "-e", "gpufleet_history_query=metric", "-e", "gpufleet_history_host=node-a",
                          "-e", "gpufleet_history_metric=membw.bandwidth_gbps", "-e", "gpufleet_history_dest=%s" % dest,
                          "-e", "gpufleet_history_print=true")
    assert rc == 0, output
    rows = run_query(str(tmp_path / "results"), "metric", {"host": "node-a", "metric": "membw.bandwidth_gbps"})
    assert [row["run_id"] for row in rows] == [RUN_ID, SECOND_RUN_ID]
    assert rows[1]["value"] < rows[0]["value"] and rows[0]["unit"] == "GB/s"
    assert dest.read_text() == query_text("csv", METRIC_COLUMNS, rows)
    assert list(csv.reader(io.StringIO(dest.read_text())))[0] == list(METRIC_COLUMNS)
    assert "metric query of %s: 2 row(s)" % (tmp_path / "results" / ".gpufleet-history.sqlite3") in output
    for line in dest.read_text().splitlines():
        assert '"%s"' % line.replace('"', '\\"') in output  # printed, one line each
    assert os.listdir(dest.parent) == [dest.name]  # no temporary left

    rc, output = playbook(tmp_path, "-e", "gpufleet_history_query=metric", "-e", "gpufleet_history_host=node-a")
    assert rc != 0
    assert "the metric query of the run index %s was not answered: query metric needs metric" % (tmp_path / "results" / ".gpufleet-history.sqlite3") in output
