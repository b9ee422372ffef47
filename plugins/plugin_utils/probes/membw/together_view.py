"""membw's together table in the dossier: each worker's copy bandwidth with every GPU at once beside the alone copy at the
same size, its share (alone / workers on its GPU) and how much of it it reached."""
from __future__ import annotations

from typing import Any, Dict, List, Optional

from ...probe_kit.kit import Cell, cell, MISSING, together_table as shared_together_table
from .together_share import reference_at, share_of

COLUMNS = ["worker", "buffer", "together", "alone, same size", "its share", "of its share", "start lag"]


def _rows(worker: Dict[str, Any], reference: Dict[str, Any]) -> List[List[Cell]]:
    result = worker["result"]
    alone = reference_at(reference, result.get("buffer_mib"))
    share = share_of(worker, result, reference)
    return [[cell("buffer_mib", result.get("buffer_mib", MISSING)),
             cell("bandwidth_gbps", result.get("bandwidth_gbps", MISSING)),
             cell("bandwidth_gbps", alone.get("bandwidth_gbps", MISSING)) if alone is not None
             else Cell("n/a", "no alone reference at this size", "na"),
             cell("owed_gbps", round(share.owed_gbps, 1)) if share else Cell("—"),
             cell("of_share_pct", round(share.pct, 1)) if share else Cell("—"),
             cell("start_lag_ms", worker.get("start_lag_ms", MISSING))]]


def together_table(data: Any) -> Optional[Dict[str, Any]]:
    """The table of data["together"] (None for a result written before the phase existed)."""
    return shared_together_table(data, "Every GPU at once (the node number beside the alone number)", COLUMNS, _rows)
