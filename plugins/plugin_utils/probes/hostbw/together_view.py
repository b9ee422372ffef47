"""hostbw's together table in the dossier: each worker's pinned H2D and D2H with every GPU copying at once beside the
alone rates, the workers sharing its PCIe uplink and how much of its share (alone / sharers) it reached."""
from __future__ import annotations

from typing import Any, Dict, List, Optional

from ...probe_kit.kit import Cell, cell, MISSING, together_table as shared_together_table
from .together_share import DIRECTIONS, share_of, sharers_of

COLUMNS = ["worker", "copy", "together", "alone", "uplink sharers", "of its share", "uplink (root port)", "start lag"]


def _rows(worker: Dict[str, Any], reference: Dict[str, Any]) -> List[List[Cell]]:
    result = worker["result"]
    if worker.get("kind") != "cuda":
        return [[Cell("host to host (no GPU)"), cell("h2h_gbps", result.get("h2h_gbps", MISSING)),
                 cell("h2h_gbps", reference.get("h2h_gbps", MISSING)), cell("uplink_sharers", sharers_of(worker, result)),
                 Cell("—"), Cell("none: no PCIe"), cell("start_lag_ms", worker.get("start_lag_ms", MISSING))]]
    rows = []
    for direction in DIRECTIONS:
        key = "%s_pinned_gbps" % direction
        share = share_of(worker, result, reference, direction)
        rows.append([Cell("pinned %s" % direction.upper()), cell(key, result.get(key, MISSING)),
                     cell(key, reference.get(key, MISSING)), cell("uplink_sharers", sharers_of(worker, result)),
                     cell("of_share_pct", round(share.pct, 1)) if share else Cell("—"),
                     cell("uplink_bridge", result.get("uplink_bridge", MISSING)),
                     cell("start_lag_ms", worker.get("start_lag_ms", MISSING))])
    return rows


def together_table(data: Any) -> Optional[Dict[str, Any]]:
    """The table of data["together"] (None for a result written before the phase existed)."""
    return shared_together_table(data, "Every GPU at once (the node number beside the alone number)", COLUMNS, _rows)
