"""The run index's queries (issue 48, point 4): a host's metric over runs, hosts that failed more than N times, every run
a GPU was in. Every column is checked against what the reports wrote (fleet.json, outcomes/), the index read-only and
driven by its indexes, bad input refused saying why; tools/history_query.py prints the same rows."""
import csv
import io
import json
import os
import sqlite3
import sys

import pytest

from ansible_collections.gpufleet.validation.plugins.module_utils.history_query_spec import HISTORY_QUERY_ARGUMENT_SPEC
from ansible_collections.gpufleet.validation.plugins.plugin_utils.history.index import index_path, update_index
from ansible_collections.gpufleet.validation.plugins.plugin_utils.history.queries import (
    FAILURE_SQL, GPU_SQL, METRIC_SQL, QUERIES, QueryError, open_index, run_query)
from ansible_collections.gpufleet.validation.plugins.plugin_utils.history.query_output import FORMATS, query_text
from ansible_collections.gpufleet.validation.plugins.plugin_utils.report.render import render_run
from ansible_collections.gpufleet.validation.plugins.plugin_utils.run_judgement import judge_run
from ansible_collections.gpufleet.validation.plugins.plugin_utils.store.atomic import text_writer_below
from ansible_collections.gpufleet.validation.plugins.plugin_utils.store.stored_run import load_run
from ansible_collections.gpufleet.validation.plugins.plugin_utils.store.safe_fs import LinkRefused

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "tools"))
# benchmarks/ is on the path by conftest
from synthetic_fleet import write_synthetic_run  # noqa: E402  pylint: disable=import-error,wrong-import-position
from tool_module import load_tool  # noqa: E402  pylint: disable=import-error,wrong-import-position

# The second run is named earliest but started last: run order is when a run started, not its name.
RUNS = ("20261201T010000Z-a", "20261130T010000Z-b", "20261203T010000Z-c")
STARTED = {"20261201T010000Z-a": "2026-12-01T01:00:00Z", "20261130T010000Z-b": "2026-12-04T01:00:00Z",
           "20261203T010000Z-c": "2026-12-03T01:00:00Z"}
IN_ORDER = ("20261201T010000Z-a", "20261203T010000Z-c", "20261130T010000Z-b")
STATUS_RANK = {"skip": 0, "pass": 1, "warn": 2, "error": 3, "fail": 4}


def report_replayed(results_dir, run_id):
    """A run of 6 hosts (seed 1) where gpu-r00-n001 reports gpu-r00-n000's GPU 0 as its own (a copied result), judged and
    reported as conftest's report_run does."""
    names = write_synthetic_run(results_dir, run_id, 6, gpus=8, seed=1)
    path = os.path.join(results_dir, run_id)
    with open(os.path.join(path, "gpu-r00-n000", "health.json"), encoding="utf-8") as handle:
        uuid = json.load(handle)["data"]["gpus"][0]["uuid"]
    copy = os.path.join(path, "gpu-r00-n001", "health.json")
    with open(copy, encoding="utf-8") as handle:
        envelope = json.load(handle)
    envelope["data"]["gpus"][0]["uuid"] = uuid
    with open(copy, "w", encoding="utf-8") as handle:
        json.dump(envelope, handle)
    run = load_run(path, names, {})
    render_run(path, names, {}, text_writer_below(results_dir), judgement=judge_run(run, results_dir, {}), loaded=run, workers=1)


def restart(results, run_id):
    """The run's outcomes say it started at STARTED[run_id] (the report writes the run id's time)."""
    folder = results / run_id / "outcomes"
    for name in os.listdir(folder):
        outcome = json.loads((folder / name).read_text())
        outcome["run_started"] = STARTED[run_id]
        (folder / name).write_text(json.dumps(outcome))


@pytest.fixture(name="results", scope="module")
def results_fixture(tmp_path_factory, report_run):
    """Three reported runs of 6 hosts (host 5 has ECC errors): the first and the last of the same results (seed 1, the
    same GPUs), the one between other GPUs; in the last, gpu-r00-n001 reports gpu-r00-n000's GPU 0. Then the index."""
    results = tmp_path_factory.mktemp("queries") / "results"
    for run_id, seed in zip(RUNS[:2], (1, 2)):
        report_run(str(results), run_id, hosts=6, seed=seed)
    report_replayed(str(results), RUNS[2])
    for run_id in RUNS:
        restart(results, run_id)
    assert not update_index(str(results)).problems
    return results


@pytest.fixture(name="fleet", scope="module")
def fleet_fixture(results):
    """{run id: its fleet.json}, as the report wrote it."""
    return {run_id: json.loads((results / run_id / "fleet.json").read_text()) for run_id in RUNS}


def test_a_hosts_metric_over_time_is_every_value_fleet_json_holds_in_run_order(results, fleet):
    for host, metric in (("gpu-r00-n005", "health.idle_power_w"), ("gpu-r00-n002", "health.cuda_init_s")):
        expected = [{"run_id": run_id, "started": STARTED[run_id], "host": host, "gpu_uuid": item["gpu_uuid"], "gpu_index": item["gpu_index"],
                     "device": item["device"], "value": item["value"], "unit": item["unit"]}
                    for run_id in IN_ORDER
                    for item in sorted(fleet[run_id]["hosts"][host]["metrics"], key=lambda item: (item["gpu_index"] or 0))
                    if item["id"] == metric]
        assert len(expected) == (24 if metric == "health.idle_power_w" else 3)
        assert run_query(str(results), "metric", {"host": host, "metric": metric}) == expected
        if metric == "health.idle_power_w":
            first_gpu = expected[0]
    one_gpu = run_query(str(results), "metric", {"host": "gpu-r00-n005", "metric": "health.idle_power_w", "gpu_uuid": first_gpu["gpu_uuid"]})
    assert [row["run_id"] for row in one_gpu] == ["20261201T010000Z-a", "20261203T010000Z-c"]  # the middle run had other GPUs
    assert one_gpu[0] == first_gpu
    assert run_query(str(results), "metric", {"host": "gpu-r00-n005", "metric": "no.such_metric"}) == []


def test_since_and_until_keep_the_runs_started_between_them_inclusive(results):
    def runs(**bounds):
        rows = run_query(str(results), "metric", dict(host="gpu-r00-n002", metric="health.cuda_init_s", **bounds))
        return [row["run_id"] for row in rows]
    assert runs(since="2026-12-03") == ["20261203T010000Z-c", "20261130T010000Z-b"]
    assert runs(until="2026-12-03") == ["20261201T010000Z-a", "20261203T010000Z-c"]  # the whole day
    assert runs(since="2026-12-03T01:00:00Z", until="2026-12-03T01:00:00Z") == ["20261203T010000Z-c"]
    assert runs(since="2026-12-03T02:00:00+01:00") == ["20261203T010000Z-c", "20261130T010000Z-b"]  # 01:00:00 UTC: c started then
    assert runs(since="2026-12-03T02:00:01+01:00") == ["20261130T010000Z-b"]
    assert runs(until="2026-12-03T00:59:59") == ["20261201T010000Z-a"]


def expected_failures(fleet, verdicts):
    """{host: (runs, first run, last run, {root check: how often})} of the hosts with a verdict of verdicts."""
    found = {}
    for run_id in IN_ORDER:
        for host, entry in fleet[run_id]["hosts"].items():
            if entry["verdict"] not in verdicts:
                continue
            runs, checks = found.setdefault(host, ([], {}))
            runs.append(run_id)
            for check in entry["checks"]:
                if check["status"] in ("fail", "error", "warn") and not check["because"]:
                    checks[check["id"]] = checks.get(check["id"], 0) + 1
    return found


@pytest.mark.parametrize("verdicts", (None, ["fail", "error", "warn"], ["pass"]))
def test_hosts_that_failed_are_counted_from_fleet_json_worst_first(results, fleet, verdicts):
    expected = expected_failures(fleet, verdicts or ["fail"])
    rows = run_query(str(results), "failures", {"verdicts": verdicts})
    assert {row["host"] for row in rows} == set(expected)
    for row in rows:
        runs, checks = expected[row["host"]]
        assert row == {"host": row["host"], "runs": len(runs), "first_run_id": runs[0], "first_started": STARTED[runs[0]],
                       "last_run_id": runs[-1], "last_started": STARTED[runs[-1]],
                       "root_checks": sorted(checks, key=lambda check: (-checks[check], check))}
    for earlier, later in zip(rows, rows[1:]):
        assert (earlier["runs"], earlier["last_started"]) >= (later["runs"], later["last_started"])
    if verdicts is None:
        assert "health.ecc_volatile_uncorrected" in next(row for row in rows if row["host"] == "gpu-r00-n005")["root_checks"]


def test_more_than_and_since_narrow_the_failures(results, fleet):
    expected = expected_failures(fleet, ["fail"])
    assert [row["host"] for row in run_query(str(results), "failures", {"more_than": 2})] == sorted(
        host for host, (runs, unused) in expected.items() if len(runs) > 2)
    assert run_query(str(results), "failures", {"more_than": 3}) == []
    late = run_query(str(results), "failures", {"since": "2026-12-04"})
    assert {row["host"] for row in late} == {host for host, entry in fleet["20261130T010000Z-b"]["hosts"].items() if entry["verdict"] == "fail"}
    assert all(row["runs"] == 1 and row["first_run_id"] == row["last_run_id"] == "20261130T010000Z-b" for row in late)


def test_every_run_a_gpu_was_in_shows_the_host_that_replayed_it(results, fleet):
    uuid = next(item["gpu_uuid"] for item in fleet[RUNS[0]]["hosts"]["gpu-r00-n000"]["metrics"] if item["gpu_index"] == 0)
    expected = []
    for run_id in IN_ORDER:
        for host, entry in sorted(fleet[run_id]["hosts"].items()):
            named = [item for item in entry["checks"] + entry["metrics"] if item.get("gpu_uuid") == uuid]
            if named:
                statuses = [item["status"] for item in named if item.get("status") in STATUS_RANK]
                expected.append({"run_id": run_id, "started": STARTED[run_id], "host": host, "gpu_index": named[0]["gpu_index"],
                                 "status": max(statuses, key=STATUS_RANK.get)})
    assert [(row["run_id"], row["host"]) for row in expected] == [
        ("20261201T010000Z-a", "gpu-r00-n000"), ("20261203T010000Z-c", "gpu-r00-n000"), ("20261203T010000Z-c", "gpu-r00-n001")]
    assert run_query(str(results), "gpu", {"gpu_uuid": uuid}) == expected


def test_each_query_is_driven_by_its_index(results):
    connection = open_index(str(results))
    try:
        for sql, params, index in ((METRIC_SQL % " AND r.started >= ?", ("h", "m", "x"), "metrics_by_host"),
                                   (GPU_SQL % "", ("g",), "gpus_by_uuid"),
                                   (FAILURE_SQL % ("?, ?", " AND h.started >= ?"), ("fail", "warn", "x"), "hosts_by_verdict")):
            plan = [row[3] for row in connection.execute("EXPLAIN QUERY PLAN " + sql, params)]
            assert plan[0].startswith("SEARCH") and "USING INDEX %s " % index in plan[0], plan
            assert not any(step.startswith("SCAN") for step in plan), plan
    finally:
        connection.close()


def test_the_index_is_only_read(results):
    before = os.stat(index_path(str(results))).st_mtime_ns
    connection = open_index(str(results))
    try:
        with pytest.raises(sqlite3.OperationalError, match="readonly"):
            connection.execute("DELETE FROM runs")
    finally:
        connection.close()
    assert os.stat(index_path(str(results))).st_mtime_ns == before


@pytest.mark.parametrize("name, arguments, says", (
    ("trend", {}, "unknown query 'trend': the queries are metric, failures, gpu"),
    ("metric", {"host": "gpu-r00-n000"}, "query metric needs metric"),
    ("gpu", {"gpu_uuid": "GPU-1", "host": "gpu-r00-n000"}, "query gpu does not take host"),
    ("metric", {"host": "gpu-r00-n000", "metric": "m", "since": "2026-13-01"}, "since must be an ISO 8601 date"),
    ("failures", {"until": "yesterday"}, "until must be an ISO 8601 date (2026-12-01) or time (2026-12-01T06:00:00Z), not 'yesterday'"),
    ("failures", {"verdicts": ["failed"]}, "unknown verdict(s) 'failed': a verdict is one of fail, error, unreachable"),
    ("failures", {"more_than": -1}, "more_than must be a whole number, 0 or more"),
    ("gpu", {"gpu_uuid": "GPU-1\n"}, "gpu_uuid must be a non-empty line of text without control characters"),
    ("metric", {"host": "gpu-r00-n000\nx", "metric": "m"}, "host must be a non-empty line of text without control characters"),
))
def test_bad_input_is_refused_saying_why(results, name, arguments, says):
    with pytest.raises(QueryError) as refused:
        run_query(str(results), name, arguments)
    assert says in str(refused.value)


def test_a_missing_index_says_to_build_it_and_is_not_made(tmp_path):
    with pytest.raises(QueryError, match="there is no run index at .*: build it .* with ansible-playbook playbooks/history.yml"):
        run_query(str(tmp_path), "failures", {})
    assert os.listdir(tmp_path) == []


def test_an_index_that_is_a_link_is_refused(results, tmp_path):
    (tmp_path / "results").mkdir()
    os.symlink(index_path(str(results)), index_path(str(tmp_path / "results")))
    with pytest.raises(LinkRefused, match="is a symbolic link .*; the run index is never written through a link"):
        run_query(str(tmp_path / "results"), "failures", {})


def test_an_index_of_another_schema_is_not_read(tmp_path):
    (tmp_path / "results").mkdir()
    connection = sqlite3.connect(index_path(str(tmp_path / "results")))
    connection.execute("CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)")
    connection.execute("INSERT INTO meta VALUES ('schema_version', '0')")
    connection.commit()
    connection.close()
    with pytest.raises(QueryError, match="holds schema version 0, this collection reads .*: rebuild it with playbooks/history.yml"):
        run_query(str(tmp_path / "results"), "failures", {})


def test_csv_and_json_hold_the_rows_under_the_querys_columns(results):
    rows = run_query(str(results), "failures", {})
    columns = QUERIES["failures"].columns
    read = list(csv.reader(io.StringIO(query_text("csv", columns, rows))))
    assert read[0] == list(columns)
    assert read[1:] == [[" ".join(value) if isinstance(value, list) else str(value) for value in row.values()] for row in rows]
    assert json.loads(query_text("json", columns, rows)) == rows
    metric = run_query(str(results), "metric", {"host": "gpu-r00-n002", "metric": "health.cuda_init_s"})
    assert list(csv.reader(io.StringIO(query_text("csv", QUERIES["metric"].columns, metric))))[1][3:6] == ["", "", ""]  # NULLs
    with pytest.raises(QueryError, match="unknown output format 'xml'"):
        query_text("xml", columns, rows)


def test_the_module_spec_offers_the_queries_and_formats_there_are():
    assert HISTORY_QUERY_ARGUMENT_SPEC["query"]["choices"] == list(QUERIES)
    assert HISTORY_QUERY_ARGUMENT_SPEC["format"]["choices"] == list(FORMATS)
    arguments = {argument for query in QUERIES.values() for argument in query.required + query.optional}
    assert arguments <= set(HISTORY_QUERY_ARGUMENT_SPEC)


def test_the_cli_prints_the_same_rows(results, capsys):
    tool = load_tool("history_query")
    host_metric = {"host": "gpu-r00-n005", "metric": "health.idle_power_w", "since": "2026-12-02"}
    assert tool.main(["metric", "--results-dir", str(results), "--host", host_metric["host"], "--metric", host_metric["metric"],
                      "--since", host_metric["since"], "--format", "json"]) == 0
    assert json.loads(capsys.readouterr().out) == run_query(str(results), "metric", host_metric)
    assert tool.main(["failures", "--results-dir", str(results), "--verdicts", "fail", "warn", "--more-than", "1"]) == 0
    assert capsys.readouterr().out == query_text("csv", QUERIES["failures"].columns,
                                                 run_query(str(results), "failures", {"verdicts": ["fail", "warn"], "more_than": 1}))
    assert tool.main(["gpu", "--results-dir", str(results / "nothing"), "--gpu-uuid", "GPU-1"]) == 2
    assert "there is no run index at" in capsys.readouterr().err
