"""The run index (issue 48, point 1): rows read from the files a report stores, an update after each report equal to a
rebuild, runs deleted or moved, another schema version, links refused, concurrent writers in real processes."""
import json
import multiprocessing
import os
import shutil
import sqlite3

import pytest

from ansible_collections.gpufleet.validation.plugins.plugin_utils.history.index import (
    connect, index_path, rebuild_index, update_index)
from ansible_collections.gpufleet.validation.plugins.plugin_utils.history.report_update import index_warnings
from ansible_collections.gpufleet.validation.plugins.plugin_utils.history.schema import SCHEMA_VERSION, TABLES
from ansible_collections.gpufleet.validation.plugins.plugin_utils.store.paths import (
    HISTORY_INDEX_FILE, OUTCOMES_DIR, RUN_ID_PATTERN, SLURM_ACTIONS_FILE, outcome_file_name)

RUNS = ("20261201T010000Z-a", "20261202T010000Z-b", "20261203T010000Z-c")


@pytest.fixture(name="stored", scope="module")
def stored_fixture(tmp_path_factory, report_run):
    """Three reported runs of 6 hosts (host 5 has ECC errors on its GPU 3), no index yet."""
    results = tmp_path_factory.mktemp("stored") / "results"
    for number, run_id in enumerate(RUNS):
        report_run(str(results), run_id, hosts=6, seed=number + 1)
    assert not os.path.exists(results / HISTORY_INDEX_FILE)
    return results


@pytest.fixture(name="results")
def results_fixture(stored, tmp_path):
    copy = tmp_path / "results"
    shutil.copytree(stored, copy)
    return copy


def table_rows(results_dir):
    """{table: sorted rows} of every table of the index."""
    connection = connect(str(results_dir))
    try:
        return {table: sorted(connection.execute("SELECT * FROM %s" % table).fetchall(), key=repr) for table in TABLES}
    finally:
        connection.close()


def act_on(results_dir, run_id, host):
    """What the act leaves in a run: the host's outcome completed with a drain, and the Slurm record listing it."""
    path = results_dir / run_id / OUTCOMES_DIR / outcome_file_name(host)
    outcome = json.loads(path.read_text())
    outcome["action"] = {"scheduler": "slurm", "node": host, "planned": "drain", "done": True, "why": "gpufleet %s: ECC" % run_id}
    path.write_text(json.dumps(outcome))
    os.utime(results_dir / run_id / OUTCOMES_DIR, ns=(1, 1))  # as a rename into it would, whatever the clock's grain
    (results_dir / run_id / SLURM_ACTIONS_FILE).write_text(json.dumps({
        "schema_version": "1", "run_id": run_id, "resumed": [], "acts": [],
        "drained": [{"node": host, "host": host, "reason": "gpufleet %s: ECC" % run_id, "at": "2026-12-03T01:30:00Z",
                     "run_started": "2026-12-03T01:00:00Z", "confirmed": True, "intake": False}]}))


def test_the_index_name_is_no_run_id_and_its_rows_are_the_stored_files(results):
    assert not RUN_ID_PATTERN.match(HISTORY_INDEX_FILE)
    update = update_index(str(results))
    assert sorted(update.indexed) == list(RUNS) and update.rebuilt_schema == "none" and update.problems == []
    rows = table_rows(results)
    assert [row[0] for row in rows["runs"]] == list(RUNS)
    assert rows["meta"] == [("schema_version", SCHEMA_VERSION)]
    fleet = json.loads((results / RUNS[2] / "fleet.json").read_text())
    hosts = {row[1]: row for row in rows["hosts"] if row[0] == RUNS[2]}
    assert {name: row[3] for name, row in hosts.items()} == {name: host["verdict"] for name, host in fleet["hosts"].items()}
    faulty = "gpu-r00-n005"
    causes = [row for row in rows["causes"] if row[:2] == (RUNS[2], faulty)]
    assert "health.ecc_volatile_uncorrected" in [row[3] for row in causes]
    assert hosts[faulty][4] == fleet["hosts"][faulty]["reasons"][0]
    gpus = {row[3]: row[4] for row in rows["gpus"] if row[:2] == (RUNS[2], faulty)}
    assert sorted(gpus) == list(range(8)) and gpus[3] == "fail"
    metrics = [row for row in rows["metrics"] if row[:2] == (RUNS[2], faulty)]
    assert len(metrics) == len(fleet["hosts"][faulty]["metrics"]) > 8
    assert {row[2] for row in metrics} >= {"health.idle_power_w", "health.temperature_c"}
    settings = {row[2]: json.loads(row[4]) for row in rows["settings"] if row[:2] == (RUNS[2], faulty)}
    assert settings["driver_version"] == "580.159.04"


def test_an_update_after_each_report_and_act_equals_a_rebuild(results, report_run):
    update_index(str(results))
    report_run(str(results), "20261204T010000Z-d", hosts=4, seed=9)
    update_index(str(results), run_id="20261204T010000Z-d")
    act_on(results, RUNS[1], "gpu-r00-n005")
    update = update_index(str(results))
    assert update.indexed == [RUNS[1]] and update.unchanged == 3
    incremental = table_rows(results)
    assert [row[2:5] for row in incremental["slurm_actions"]] == [("drain", "gpu-r00-n005", "gpu-r00-n005")]
    assert [row[12:16] for row in incremental["hosts"] if row[:2] == (RUNS[1], "gpu-r00-n005")] == [("slurm", "gpu-r00-n005", "drain", 1)]
    assert sorted(rebuild_index(str(results)).indexed) == sorted(RUNS + ("20261204T010000Z-d",))
    assert table_rows(results) == incremental
    os.unlink(index_path(str(results)))
    rebuild_index(str(results))
    assert table_rows(results) == incremental


def test_deleted_and_moved_runs_leave_the_index(results):
    update_index(str(results))
    shutil.rmtree(results / RUNS[0])
    os.rename(results / RUNS[1], results / "20261222T000000Z-moved")
    update = update_index(str(results))
    assert sorted(update.dropped) == [RUNS[0], RUNS[1]] and update.indexed == ["20261222T000000Z-moved"]
    rows = table_rows(results)
    assert {row[0] for table in TABLES if table != "meta" for row in rows[table]} == {RUNS[2], "20261222T000000Z-moved"}
    rebuild_index(str(results))
    assert table_rows(results) == rows


def test_an_index_of_another_schema_version_is_made_again_not_read(results):
    connection = sqlite3.connect(index_path(str(results)))
    connection.executescript("CREATE TABLE meta (key TEXT, value TEXT); INSERT INTO meta VALUES ('schema_version', '0');"
                             "CREATE TABLE runs (run_id TEXT, verdicts TEXT); INSERT INTO runs VALUES ('x', 'y');")
    connection.close()
    update = update_index(str(results))
    assert update.rebuilt_schema == "0" and sorted(update.indexed) == list(RUNS)
    assert [row[0] for row in table_rows(results)["runs"]] == list(RUNS)


def test_a_file_that_is_no_database_is_made_again_by_the_rebuild(results):
    (results / HISTORY_INDEX_FILE).write_text("not a database\n" * 100)
    with pytest.raises(sqlite3.DatabaseError):
        update_index(str(results))
    update = rebuild_index(str(results))
    assert "was not a readable SQLite database" in update.problems[0] and sorted(update.indexed) == list(RUNS)


@pytest.mark.parametrize("name", [HISTORY_INDEX_FILE, HISTORY_INDEX_FILE + "-wal", HISTORY_INDEX_FILE + "-shm"])
def test_a_link_in_the_index_place_is_refused_and_the_report_warns(results, tmp_path, name):
    if name != HISTORY_INDEX_FILE:
        update_index(str(results))
    target = tmp_path / "elsewhere"
    target.write_bytes(b"")
    if os.path.exists(results / name):
        os.replace(results / name, tmp_path / "moved")
    os.symlink(target, results / name)
    with pytest.raises(OSError, match="symbolic link .* never written through a link"):
        update_index(str(results))
    warnings = index_warnings(str(results), RUNS[2])
    assert len(warnings) == 1 and "was not updated" in warnings[0] and "playbooks/history.yml" in warnings[0]
    assert target.read_bytes() == b""


def _writer(results_dir, rounds, rebuild):
    for number in range(rounds):
        if rebuild and number % 2:
            rebuild_index(results_dir)
        else:
            update_index(results_dir)


def test_concurrent_writers_never_corrupt_it(results, report_run):
    """Six processes bringing one index up to date at once (two of them rebuilding), while runs are added: every run is
    there, the database is intact, and it equals a rebuild."""
    context = multiprocessing.get_context("spawn")
    writers = [context.Process(target=_writer, args=(str(results), 4, number < 2)) for number in range(6)]
    for writer in writers:
        writer.start()
    added = ["20261210T000000Z-%d" % number for number in range(2)]
    for run_id in added:
        report_run(str(results), run_id, hosts=2, seed=7)
    for writer in writers:
        writer.join(120)
    assert [writer.exitcode for writer in writers] == [0] * 6
    update_index(str(results))
    connection = connect(str(results))
    try:
        assert connection.execute("PRAGMA integrity_check").fetchall() == [("ok",)]
    finally:
        connection.close()
    rows = table_rows(results)
    assert [row[0] for row in rows["runs"]] == sorted(RUNS + tuple(added))
    rebuild_index(str(results))
    assert table_rows(results) == rows
