"""membw's together table in the dossier: each worker's copy bandwidth with every GPU at once beside the alone copy at the
same size, its share (alone / workers on its GPU) and how much of it it reached."""
from __future__ import annotations

from typing import Any, Dict, List

from ...judge.together_workers import NOT_CONCURRENT, worker_gpu
from ...report_cells import Cell, cell, table
from ...result_fields import MISSING, error_words, is_unavailable, unavailable_reason
from .together_share import reference_at, share_of

COLUMNS = ["worker", "buffer", "together", "alone, same size", "its share", "of its share", "start lag"]


def together_table(record: Any) -> Dict[str, Any]:
    title = "Every GPU at once (the node number beside the alone number)"
    if is_unavailable(record):
        return table(title, COLUMNS, [], "the together phase did not run: %s" % unavailable_reason(record))
    if not isinstance(record, dict) or not isinstance(record.get("workers"), list):
        return table(title, COLUMNS, [], "the together record holds no workers")
    reference = record.get("alone_reference")
    rows: List[List[Cell]] = []
    for worker in record["workers"]:
        if not isinstance(worker, dict):
            continue
        unused_gpu, label = worker_gpu(worker)
        result = worker.get("result") if isinstance(worker.get("result"), dict) else None
        if worker.get("status") != "ok" or result is None:
            rows.append([Cell(label), Cell("failed", error_words(worker.get("error")) or "no result", "bad")] + [Cell("—")] * 5)
            continue
        alone = reference_at(reference, result.get("buffer_mib"))
        share = share_of(worker, result, reference)
        rows.append([Cell(label), cell("buffer_mib", result.get("buffer_mib", MISSING)),
                     cell("bandwidth_gbps", result.get("bandwidth_gbps", MISSING)),
                     cell("bandwidth_gbps", alone.get("bandwidth_gbps", MISSING)) if alone is not None
                     else Cell("n/a", "no alone reference at this size", "na"),
                     cell("owed_gbps", round(share.owed_gbps, 1)) if share else Cell("—"),
                     cell("of_share_pct", round(share.pct, 1)) if share else Cell("—"),
                     cell("start_lag_ms", worker.get("start_lag_ms", MISSING))])
    found = table(title, COLUMNS, rows, "no worker ran")
    if record.get("released_together") is False:
        found["title"] += ": %s" % NOT_CONCURRENT
    return found
