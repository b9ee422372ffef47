# -*- coding: utf-8 -*-
# Copyright: gpufleet.validation contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The trend checks' reader of the run index (judge/history_model.HistorySource): a host's earlier runs, newest first,
read a host at a time in the process that judges it. Each process opens its own connection (a forked worker never
uses its parent's), and only reads (PRAGMA query_only)."""
from __future__ import annotations

import json
import os
import sqlite3
from datetime import datetime, timezone
from typing import Any, Dict, Iterable, List, Mapping, Optional, Sequence, Set, Tuple

from ..judge.history_model import FAULT_STATUSES, HISTORY_PROBE, EarlierRun, HistorySource, HostHistory, series_key
from ..store.run_order import id_time
from .index import open_index

_HISTORY_PREFIX = HISTORY_PROBE + "."
# The params of the trend rules that count runs back: the most any host's rules ask for is what is read.
RUN_COUNT_PARAMS = ("window_runs", "lookback_runs", "runs")


def runs_needed(rules: Iterable[Mapping[str, Any]], overrides: Mapping[str, Mapping[str, Any]]) -> int:
    """The most earlier runs a trend rule reads, over the rules and every host's overrides of them."""
    wanted = [1]
    history_ids = set()
    for rule in rules:
        if isinstance(rule, Mapping) and rule.get("probe") == HISTORY_PROBE:
            history_ids.add(rule.get("id"))
            wanted += [value for name, value in (rule.get("params") or {}).items() if name in RUN_COUNT_PARAMS and isinstance(value, int)]
    for host_overrides in overrides.values():
        for rule_id, override in (host_overrides or {}).items():
            if rule_id in history_ids and isinstance(override, Mapping):
                wanted += [value for name, value in (override.get("params") or {}).items()
                           if name in RUN_COUNT_PARAMS and isinstance(value, int) and not isinstance(value, bool)]
    return max(wanted)


def run_started(run_id: str) -> str:
    """When a run started, ISO 8601 UTC: the time a playbook-named run id starts with, else now (as the index's rows
    say it: rows._started)."""
    named = id_time(run_id)
    if named:
        return named.replace(" ", "T") + "Z"
    return datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


class IndexHistory(HistorySource):
    """Earlier runs of each host from <results>/.gpufleet-history.sqlite3, of the runs named earlier only (those opened
    before this one: store/run_order), at most runs_back of them, and the values of the headline metrics given."""

    def __init__(self, results_dir: str, run_id: str, earlier: Iterable[str], runs_back: int, metric_ids: Sequence[str],
                 problem: str = "") -> None:
        self.results_dir = results_dir
        self.started = run_started(run_id)
        self.earlier: Set[str] = set(earlier)
        self.runs_back = max(int(runs_back), 1)
        self.metric_ids = tuple(sorted(metric_ids))
        self.problem = problem
        self._connection: Optional[sqlite3.Connection] = None
        self._pid = 0

    def _connect(self) -> sqlite3.Connection:
        if self._connection is not None and self._pid == os.getpid():
            return self._connection
        connection = open_index(self.results_dir)
        self._connection, self._pid = connection, os.getpid()
        return connection

    def of(self, host: str) -> HostHistory:
        if self.problem:
            return HostHistory.unavailable(self.problem)
        if not self.earlier:
            return HostHistory.unavailable("this is the first run in its results directory")
        try:
            connection = self._connect()
            runs = self._runs(connection, host)
            if not runs:
                return HostHistory.unavailable("no earlier run of this host is in the run index")
            return HostHistory(runs=runs, series=self._series(connection, host, {run.run_id: run.started for run in runs}))
        except (OSError, sqlite3.Error) as exc:
            return HostHistory.unavailable("the run index could not be read (%s: %s; rebuild it with playbooks/history.yml)"
                                           % (type(exc).__name__, exc))

    def _runs(self, connection: sqlite3.Connection, host: str) -> List[EarlierRun]:
        rows = connection.execute("SELECT run_id, started, measured_verdict, verdict, lowest FROM hosts WHERE host = ? "
                                  "ORDER BY started DESC, run_id DESC", (host,)).fetchall()
        kept = [row for row in rows if row[0] in self.earlier][:self.runs_back]
        if not kept:
            return []
        ids = [row[0] for row in kept]
        faults = _faults(connection, host, ids)
        resumed = {row[0] for row in connection.execute(
            "SELECT DISTINCT run_id FROM slurm_actions WHERE host = ? AND action = 'resume'", (host,))}
        gpus: Dict[str, List[str]] = {}
        for run_id, uuid in connection.execute("SELECT run_id, gpu_uuid FROM gpus WHERE host = ?", (host,)):
            gpus.setdefault(run_id, []).append(uuid)
        return [EarlierRun(run_id, started or "", measured or verdict or "", tuple(faults.get(run_id, ())), _lowest(lowest),
                           run_id in resumed, tuple(sorted(gpus.get(run_id, ()))))
                for run_id, started, measured, verdict, lowest in kept]

    def _series(self, connection: sqlite3.Connection, host: str, started: Dict[str, str]) -> Dict[Tuple[str, str], List[Tuple[str, float, str]]]:
        if not self.metric_ids:
            return {}
        series: Dict[Tuple[str, str], List[Tuple[str, float, str]]] = {}
        marks = ", ".join("?" * len(self.metric_ids))
        for run_id, metric_id, gpu_uuid, device, value in connection.execute(
                "SELECT run_id, metric_id, gpu_uuid, device, value FROM metrics WHERE host = ? AND metric_id IN (%s) "
                "AND value IS NOT NULL" % marks, (host,) + self.metric_ids):
            if run_id in started:
                series.setdefault(series_key(metric_id, gpu_uuid, device), []).append((started[run_id], value, run_id))
        for points in series.values():
            points.sort(reverse=True)
        return series


def _faults(connection: sqlite3.Connection, host: str, run_ids: List[str]) -> Dict[str, List[str]]:
    found: Dict[str, List[str]] = {}
    wanted = set(run_ids)
    for run_id, check_id, status in connection.execute("SELECT run_id, check_id, status FROM causes WHERE host = ? ORDER BY position",
                                                       (host,)):
        if run_id in wanted and status in FAULT_STATUSES and not check_id.startswith(_HISTORY_PREFIX):
            found.setdefault(run_id, []).append(check_id)
    return found


def _lowest(text: Optional[str]) -> Tuple[str, ...]:
    try:
        found = json.loads(text) if text else []
    except ValueError:
        return ()
    return tuple(item for item in found if isinstance(item, str)) if isinstance(found, list) else ()
