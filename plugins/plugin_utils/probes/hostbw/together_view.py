"""hostbw's together table in the dossier: each worker's pinned H2D and D2H with every GPU copying at once beside the
alone rates, the workers sharing its PCIe uplink and how much of its share (alone / sharers) it reached."""
from __future__ import annotations

from typing import Any, Dict, List

from ...judge.together_workers import NOT_CONCURRENT, worker_gpu
from ...report_cells import Cell, cell, table
from ...result_fields import MISSING, error_words, is_unavailable, unavailable_reason
from .together_share import DIRECTIONS, share_of, sharers_of

COLUMNS = ["worker", "copy", "together", "alone", "uplink sharers", "of its share", "uplink (root port)", "start lag"]


def together_table(record: Any) -> Dict[str, Any]:
    title = "Every GPU at once (the node number beside the alone number)"
    if is_unavailable(record):
        return table(title, COLUMNS, [], "the together phase did not run: %s" % unavailable_reason(record))
    if not isinstance(record, dict) or not isinstance(record.get("workers"), list):
        return table(title, COLUMNS, [], "the together record holds no workers")
    reference = record.get("alone_reference") if isinstance(record.get("alone_reference"), dict) else {}
    rows: List[List[Cell]] = []
    for worker in record["workers"]:
        if not isinstance(worker, dict):
            continue
        unused_gpu, label = worker_gpu(worker)
        result = worker.get("result") if isinstance(worker.get("result"), dict) else None
        if worker.get("status") != "ok" or result is None:
            rows.append([Cell(label), Cell("failed", error_words(worker.get("error")) or "no result", "bad")] + [Cell("—")] * 6)
            continue
        if worker.get("kind") != "cuda":
            rows.append([Cell(label), Cell("host to host (no GPU)"), cell("h2h_gbps", result.get("h2h_gbps", MISSING)),
                         cell("h2h_gbps", reference.get("h2h_gbps", MISSING)), cell("uplink_sharers", sharers_of(worker, result)),
                         Cell("—"), Cell("none: no PCIe"), cell("start_lag_ms", worker.get("start_lag_ms", MISSING))])
            continue
        for direction in DIRECTIONS:
            key = "%s_pinned_gbps" % direction
            share = share_of(worker, result, reference, direction)
            rows.append([Cell(label), Cell("pinned %s" % direction.upper()), cell(key, result.get(key, MISSING)),
                         cell(key, reference.get(key, MISSING)), cell("uplink_sharers", sharers_of(worker, result)),
                         cell("of_share_pct", round(share.pct, 1)) if share else Cell("—"),
                         cell("uplink_bridge", result.get("uplink_bridge", MISSING)),
                         cell("start_lag_ms", worker.get("start_lag_ms", MISSING))])
    found = table(title, COLUMNS, rows, "no worker ran")
    if record.get("released_together") is False:
        found["title"] += ": %s" % NOT_CONCURRENT
    return found
