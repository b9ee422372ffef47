"""benchmarks/history_scale.py (issue 48, point 5) at a tiny scale: it builds the index night after night from the files
it writes, measures what it says it measures, and its compact nights give the index the very rows full ones give."""
import os
import sqlite3
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
sys.path.insert(0, os.path.join(ROOT, "benchmarks"))

import history_scale  # noqa: E402  pylint: disable=import-error,wrong-import-position

TABLES = ("hosts", "causes", "gpus", "metrics", "settings", "slurm_actions")


def test_a_compact_night_indexes_the_rows_of_a_full_one(tmp_path):
    members, compact, full = history_scale.make_templates(str(tmp_path), 12, 8, True)
    found = {}
    for kind, templates in (("compact", compact), ("full", full)):
        results = tmp_path / kind
        results.mkdir()
        history_scale.write_night(str(results), 0, 14, members, templates)  # 14 hosts of 12 templates: two reused
        assert not history_scale.update_index(str(results)).problems
        connection = sqlite3.connect(history_scale.index_path(str(results)))
        found[kind] = {table: sorted(connection.execute("SELECT * FROM %s" % table).fetchall(), key=repr) for table in TABLES}
        found[kind]["runs"] = [row[:-1] for row in connection.execute("SELECT * FROM runs")]  # all but the files' identity
        connection.close()
    assert found["compact"] == found["full"]
    assert len(found["full"]["hosts"]) == 14 and len(found["full"]["gpus"]) == 14 * 8
    assert len({row[4] for row in found["full"]["metrics"] if row[4]}) == 14 * 8  # each host's own GPUs
    assert os.path.getsize(tmp_path / "compact" / history_scale.night(0)[0] / "fleet.json") * 4 < os.path.getsize(
        tmp_path / "full" / history_scale.night(0)[0] / "fleet.json")


def test_the_benchmark_runs_at_a_tiny_scale_and_prints_its_table(tmp_path):
    completed = subprocess.run([sys.executable, os.path.join(ROOT, "benchmarks", "history_scale.py"), "--dir", str(tmp_path),
                                "--hosts", "6", "--runs", "3", "--gpus", "4"], capture_output=True, text=True, timeout=300, check=False)
    assert completed.returncode == 0, completed.stderr
    lines = completed.stdout.splitlines()
    assert [line.split(":")[0] for line in lines[:3]] == ["night %d/3 %s" % (number + 1, history_scale.night(number)[0]) for number in range(3)]
    assert "| rows a night | 6 hosts, " in completed.stdout and " 24 GPUs, " in completed.stdout
    # 4 runs (3 nights and the one more) of 4 GPUs: the trend query's rows
    assert "| trend query, gpu-r000-n00003, health.idle_power_w, 16 rows, warm" in completed.stdout
    connection = sqlite3.connect(history_scale.index_path(str(tmp_path / "results")))
    assert connection.execute("SELECT count(*) FROM runs").fetchone()[0] == 4
    connection.close()
