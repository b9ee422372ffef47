# -*- coding: utf-8 -*-
# Copyright: gpufleet.validation contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The queries an operator runs over the run index (docs/history.md, "Queries"): a host's metric over runs, the hosts
that failed more than N times since a date, every run a GPU was in. Each opens the index read-only and returns a list
of rows, each a dict of its query's COLUMNS. Run order: when the run started (runs.started), then the run id.

Pure: the standard library and the index's own helpers; no Ansible. The module (history_query), its playbook and
tools/history_query.py all call run_query."""
from __future__ import annotations

import datetime
import re
import sqlite3
from dataclasses import dataclass
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple

from ..judge.model import VERDICTS
from . import index
from .index import index_path
from .schema import SCHEMA_VERSION

Row = Dict[str, Any]
DEFAULT_VERDICTS = ("fail",)
# A host, metric id, GPU UUID: one line of printable text, no wider than any the report writes.
_PLAIN = re.compile(r"[^\x00-\x1f\x7f]{1,255}")
_DATE = re.compile(r"^\d{4}-\d{2}-\d{2}$")


class QueryError(ValueError):
    """A query that cannot be answered as asked: an unknown query, a bad argument, no index to read."""


def _plain(name: str, value: Any) -> str:
    if not isinstance(value, str) or not _PLAIN.fullmatch(value) or value != value.strip():
        raise QueryError("%s must be a non-empty line of text without control characters or surrounding spaces, not %r" % (name, value))
    return value


def _bound(name: str, value: Optional[str], end: bool) -> Optional[str]:
    """An ISO 8601 date (YYYY-MM-DD) or time (YYYY-MM-DDTHH:MM:SS, with Z or an offset; none is UTC) as the UTC text
    runs.started is stored in. end: the bound is exclusive, one day past a date, one second past a time, so that an
    until date keeps that whole day."""
    if value is None or value == "":
        return None
    if not isinstance(value, str):
        raise QueryError("%s must be an ISO 8601 date or time, not %r" % (name, value))
    try:
        if _DATE.match(value):
            moment = datetime.datetime.strptime(value, "%Y-%m-%d")
            step = datetime.timedelta(days=1)
        else:
            moment = datetime.datetime.fromisoformat(value[:-1] + "+00:00" if value.endswith("Z") else value)
            if moment.tzinfo is not None:
                moment = moment.astimezone(datetime.timezone.utc).replace(tzinfo=None)
            moment = moment.replace(microsecond=0)
            step = datetime.timedelta(seconds=1)
    except ValueError:
        raise QueryError("%s must be an ISO 8601 date (2026-12-01) or time (2026-12-01T06:00:00Z), not %r" % (name, value)) from None
    return (moment + step if end else moment).strftime("%Y-%m-%dT%H:%M:%SZ")


def _when(since: Optional[str], until: Optional[str], column: str) -> Tuple[str, List[str]]:
    """The SQL condition on a started column and its parameters for since (inclusive) and until (inclusive)."""
    parts, params = [], []
    low, high = _bound("since", since, False), _bound("until", until, True)
    if low is not None:
        parts.append("%s >= ?" % column)
        params.append(low)
    if high is not None:
        parts.append("%s < ?" % column)
        params.append(high)
    return "".join(" AND " + part for part in parts), params


def open_index(results_dir: str) -> sqlite3.Connection:
    """The results directory's index, opened read-only and never through a link (index.open_index); QueryError when
    there is none to read or it is another schema version's."""
    path = index_path(results_dir)
    try:
        connection = index.open_index(results_dir)
    except FileNotFoundError:
        raise QueryError("there is no run index at %s: build it from the results directory's runs with "
                         "ansible-playbook playbooks/history.yml -e gpufleet_results_dir=%s" % (path, results_dir)) from None
    try:
        try:
            found = connection.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchone()
        except sqlite3.DatabaseError as exc:
            raise QueryError("%s is not a run index this collection can read (%s): rebuild it with playbooks/history.yml" % (path, exc)) from None
        if not found or found[0] != SCHEMA_VERSION:
            raise QueryError("%s holds schema version %s, this collection reads %s: rebuild it with playbooks/history.yml"
                             % (path, found[0] if found else "none", SCHEMA_VERSION))
    except BaseException:
        connection.close()
        raise
    return connection


METRIC_COLUMNS = ("run_id", "started", "host", "gpu_uuid", "gpu_index", "device", "value", "unit")
# CROSS JOIN keeps metrics the outer loop: the host's rows found by metrics_by_host (host, metric_id, run_id), each
# run's started by the runs primary key, never a walk of every run's metrics (tests/unit/history/test_queries.py).
METRIC_SQL = ("SELECT m.run_id, r.started, m.host, m.gpu_uuid, m.gpu_index, m.device, m.value, m.unit "
              "FROM metrics AS m CROSS JOIN runs AS r ON r.run_id = m.run_id "
              "WHERE m.host = ? AND m.metric_id = ?%s ORDER BY r.started, m.run_id, m.gpu_index, m.gpu_uuid, m.device")


def metric_over_time(connection: sqlite3.Connection, host: str, metric: str, gpu_uuid: Optional[str] = None,
                     since: Optional[str] = None, until: Optional[str] = None) -> List[Row]:
    """One row per run and GPU (or device, or the host) of the host's values of metric, in run order."""
    params: List[Any] = [_plain("host", host), _plain("metric", metric)]
    condition = ""
    if gpu_uuid:
        condition += " AND m.gpu_uuid = ?"
        params.append(_plain("gpu_uuid", gpu_uuid))
    when, when_params = _when(since, until, "r.started")
    return [dict(zip(METRIC_COLUMNS, row)) for row in connection.execute(METRIC_SQL % (condition + when), params + when_params)]


FAILURE_COLUMNS = ("host", "runs", "first_run_id", "first_started", "last_run_id", "last_started", "root_checks")
# Each run of a host with one of the verdicts (hosts_by_verdict: verdict, started), with its root causes' checks.
FAILURE_SQL = ("SELECT h.host, h.run_id, h.started, c.check_id FROM hosts AS h "
               "LEFT JOIN causes AS c ON c.run_id = h.run_id AND c.host = h.host "
               "WHERE h.verdict IN (%s)%s ORDER BY h.host, h.started, h.run_id, c.position")


def failures(connection: sqlite3.Connection, verdicts: Sequence[str] = DEFAULT_VERDICTS, more_than: int = 0,
             since: Optional[str] = None, until: Optional[str] = None) -> List[Row]:
    """Per host with more than more_than runs of one of verdicts: how many, its first and last such run, and the root
    checks of those runs (most often seen first); the hosts with the most such runs first, then the latest."""
    verdicts = [verdicts] if isinstance(verdicts, str) else list(verdicts or DEFAULT_VERDICTS)
    unknown = [verdict for verdict in verdicts if verdict not in VERDICTS]
    if unknown:
        raise QueryError("unknown verdict(s) %s: a verdict is one of %s" % (", ".join(map(repr, unknown)), ", ".join(VERDICTS)))
    if isinstance(more_than, bool) or not isinstance(more_than, int) or more_than < 0:
        raise QueryError("more_than must be a whole number, 0 or more, not %r" % (more_than,))
    when, when_params = _when(since, until, "h.started")
    hosts: Dict[str, Dict[str, Any]] = {}
    for host, run_id, started, check_id in connection.execute(FAILURE_SQL % (", ".join("?" * len(verdicts)), when),
                                                              verdicts + when_params):
        found = hosts.setdefault(host, {"runs": [], "checks": {}})
        if not found["runs"] or found["runs"][-1] != (run_id, started):
            found["runs"].append((run_id, started))
        if check_id is not None:
            found["checks"][check_id] = found["checks"].get(check_id, 0) + 1
    rows = [{"host": host, "runs": len(found["runs"]), "first_run_id": found["runs"][0][0], "first_started": found["runs"][0][1],
             "last_run_id": found["runs"][-1][0], "last_started": found["runs"][-1][1],
             "root_checks": sorted(found["checks"], key=lambda check: (-found["checks"][check], check))}
            for host, found in hosts.items() if len(found["runs"]) > more_than]
    rows.sort(key=lambda row: (row["last_started"] or "", row["last_run_id"]), reverse=True)
    rows.sort(key=lambda row: row["runs"], reverse=True)
    return rows


GPU_COLUMNS = ("run_id", "started", "host", "gpu_index", "status")
GPU_SQL = ("SELECT g.run_id, r.started, g.host, g.gpu_index, g.status FROM gpus AS g "
           "CROSS JOIN runs AS r ON r.run_id = g.run_id WHERE g.gpu_uuid = ?%s ORDER BY r.started, g.run_id, g.host")


def gpu_runs(connection: sqlite3.Connection, gpu_uuid: str, since: Optional[str] = None, until: Optional[str] = None) -> List[Row]:
    """Every run the GPU was in, on which host (two rows of one run: two hosts reported it), in run order."""
    when, when_params = _when(since, until, "r.started")
    return [dict(zip(GPU_COLUMNS, row)) for row in connection.execute(GPU_SQL % when, [_plain("gpu_uuid", gpu_uuid)] + when_params)]


@dataclass(frozen=True)
class Query:
    columns: Tuple[str, ...]
    function: Callable[..., List[Row]]
    required: Tuple[str, ...]
    optional: Tuple[str, ...]


# The one definition of each query: its columns (the CSV and JSON writers' too) and the arguments it takes.
QUERIES: Dict[str, Query] = {
    "metric": Query(METRIC_COLUMNS, metric_over_time, ("host", "metric"), ("gpu_uuid", "since", "until")),
    "failures": Query(FAILURE_COLUMNS, failures, (), ("verdicts", "more_than", "since", "until")),
    "gpu": Query(GPU_COLUMNS, gpu_runs, ("gpu_uuid",), ("since", "until")),
}
# Every argument some query takes: what the module passes on, each query refusing one it does not take (run_query).
ARGUMENTS = tuple(sorted({argument for query in QUERIES.values() for argument in query.required + query.optional}))


def run_query(results_dir: str, name: str, arguments: Dict[str, Any]) -> List[Row]:
    """The rows of query name over the index of results_dir. arguments: the query's own (QUERIES); one it does not
    take, given a value, is refused, as is a required one missing."""
    if name not in QUERIES:
        raise QueryError("unknown query %r: the queries are %s" % (name, ", ".join(QUERIES)))
    query = QUERIES[name]
    given = {key: value for key, value in arguments.items() if value not in (None, "", [], ())}
    missing = [key for key in query.required if key not in given]
    if missing:
        raise QueryError("query %s needs %s" % (name, ", ".join(missing)))
    foreign = sorted(set(given) - set(query.required) - set(query.optional))
    if foreign:
        raise QueryError("query %s does not take %s (it takes %s)" % (name, ", ".join(foreign), ", ".join(query.required + query.optional)))
    connection = open_index(results_dir)
    try:
        return query.function(connection, **given)
    finally:
        connection.close()
