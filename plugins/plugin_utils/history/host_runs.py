# -*- coding: utf-8 -*-
# Copyright: gpufleet.validation contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""What a host's dossier plots of its earlier runs (docs/history.md, "Pictures"), read from the run index: the runs
before this one (newest HOST_PLOT_RUNS - 1 of them), each with the host's verdict, its values of the headline metrics
asked for, and the fleet median of its SKU group in that run (the index's statistics). Only reads, with parameterised
SQL, one short connection per host (the dossiers are rendered in forked workers: none shares its parent's)."""
from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import Dict, List, Optional, Sequence, Tuple

from ..judge.history_model import SeriesKey, series_key
from .index import index_path, open_index
from .trend_reader import run_started

# A dossier's plots show this many runs: this one and the ones before it (the slow-decay check's default window).
HOST_PLOT_RUNS = 14
# fleet_statistics' group of a host whose SKU is unknown (judge/fleet.py)
UNKNOWN_SKU = "unknown"


@dataclass
class HostRuns:
    """A host's earlier runs, oldest first: (run id, started, verdict); its headline values {series key: {run id: value}};
    the fleet median of its SKU group {metric id: {run id: median}}."""

    runs: List[Tuple[str, str, str]] = field(default_factory=list)
    values: Dict[SeriesKey, Dict[str, float]] = field(default_factory=dict)
    gpu_index: Dict[SeriesKey, int] = field(default_factory=dict)
    medians: Dict[str, Dict[str, float]] = field(default_factory=dict)


def host_runs(results_dir: str, run_id: str, host: str, metric_ids: Sequence[str], runs_back: int = HOST_PLOT_RUNS - 1
              ) -> Optional[HostRuns]:
    """The host's runs before run_id (those that started before it, newest runs_back of them) from the index of
    results_dir; None where the results directory has no index. Raises OSError or sqlite3.Error when it cannot be read."""
    if not os.path.lexists(index_path(results_dir)):
        return None
    connection = open_index(results_dir)
    try:
        connection.execute("BEGIN")  # one read transaction: the three queries see the same runs
        rows = connection.execute("SELECT run_id, started, verdict FROM hosts WHERE host = ? AND run_id != ? AND started < ? "
                                  "ORDER BY started DESC, run_id DESC LIMIT ?", (host, run_id, run_started(run_id), runs_back)).fetchall()
        found = HostRuns(runs=[(row[0], row[1] or "", row[2] or "") for row in reversed(rows)])
        ids = tuple(row[0] for row in rows)
        metrics = tuple(metric_ids)
        if not ids or not metrics:
            return found
        run_marks, metric_marks = ", ".join("?" * len(ids)), ", ".join("?" * len(metrics))
        for row_run, metric_id, gpu_uuid, gpu_index, device, value in connection.execute(
                "SELECT run_id, metric_id, gpu_uuid, gpu_index, device, value FROM metrics WHERE host = ? AND metric_id IN (%s) "
                "AND run_id IN (%s) AND value IS NOT NULL" % (metric_marks, run_marks), (host,) + metrics + ids):
            key = series_key(metric_id, gpu_uuid, device)
            found.values.setdefault(key, {})[row_run] = value
            if gpu_index is not None:
                found.gpu_index[key] = gpu_index
        for row_run, metric_id, median in connection.execute(
                "SELECT s.run_id, s.metric_id, s.median FROM statistics s JOIN hosts h ON h.run_id = s.run_id AND h.host = ? "
                "AND s.sku_group = coalesce(h.sku, ?) WHERE s.run_id IN (%s) AND s.metric_id IN (%s) AND s.median IS NOT NULL"
                % (run_marks, metric_marks), (host, UNKNOWN_SKU) + ids + metrics):
            found.medians.setdefault(metric_id, {})[row_run] = median
    finally:
        connection.close()
    return found
