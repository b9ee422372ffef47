"""The dossier's together tables of the per-GPU probes (issue 35): one row per worker (or per worker and dtype), the
node's number (every GPU at once) beside the alone number and the alone number's share for the worker; and the words of
each worker's name and of workers not released together, which the together checks use too."""
from __future__ import annotations

from typing import Any, Callable, Dict, List, Optional

from ...report.number_format import format_quantity
from ...report.cells import Cell, cell, table
from ...result_fields import error_words, is_unavailable, number_or_none


def worker_label(entry: Dict[str, Any]) -> str:
    """'GPU 0 worker 1' (the device on the CPU path)."""
    device = "CPU" if entry.get("kind") == "cpu" else "GPU %s" % entry.get("device_index", "?")
    return "%s worker %s" % (device, entry.get("worker", "?"))


def release_words(together: Dict[str, Any]) -> str:
    """Why the workers' windows may not have overlapped ('' when they were released together)."""
    if together.get("released_together") is not False:
        return ""
    return ("the workers were not released together (start spread %s): their windows may not have overlapped, so this is "
            "not every GPU at once" % format_quantity(together.get("start_spread_ms"), "ms"))


def device_sharers(entry: Dict[str, Any]) -> int:
    """The workers on this worker's device, its own included (1 where the record does not say): what the alone rate is
    shared between, for every check and table of the together phase."""
    sharers = entry.get("workers_on_device")
    return max(1, sharers) if isinstance(sharers, int) and not isinstance(sharers, bool) else 1


def expected_share(alone_value: Any, entry: Dict[str, Any]) -> Optional[float]:
    """The alone reference's share for this worker: alone / workers_on_device (None without a number)."""
    value = number_or_none(alone_value)
    return None if value is None else value / device_sharers(entry)


def beside_cells(key: str, together: Any, alone: Any, entry: Dict[str, Any]) -> List[Cell]:
    """together, alone, alone / workers on the device, together as % of that: the node's number beside the alone one."""
    expected = expected_share(alone, entry)
    value = number_or_none(together)
    percent = None if expected in (None, 0.0) or value is None else 100.0 * value / expected
    return [cell(key, together), cell(key, alone), cell(key, expected) if expected is not None else Cell("—"),
            Cell(format_quantity(percent, "%")) if percent is not None else Cell("—")]


def together_table(data: Any, title: str, columns: List[str],
                   rows_of: Callable[[Dict[str, Any], Dict[str, Any]], List[List[Cell]]]) -> Optional[Dict[str, Any]]:
    """The table of data["together"] (None for a result written before the phase existed). ``rows_of(entry, alone
    reference)`` gives an ok worker's rows without the first column, the worker's label."""
    together = data.get("together") if isinstance(data, dict) else None
    if together is None:
        return None
    if is_unavailable(together):
        return table(title, columns, [], "the together phase did not run: %s" % together["unavailable"])
    if not isinstance(together, dict) or not isinstance(together.get("workers"), list):
        return table(title, columns, [], "the together record holds no workers")
    alone = together.get("alone_reference") if isinstance(together.get("alone_reference"), dict) else {}
    rows = []
    for entry in together["workers"]:
        if not isinstance(entry, dict):
            continue
        label = Cell(worker_label(entry))
        if entry.get("status") != "ok" or not isinstance(entry.get("result"), dict):
            rows.append([label, Cell("failed", error_words(entry.get("error")) or "no result", "bad")] + [Cell("—")] * (len(columns) - 2))
            continue
        rows.extend([label] + cells for cells in rows_of(entry, alone))
    released = together.get("released_together")
    spread = format_quantity(together.get("start_spread_ms"), "ms")
    title += (" (released together, start spread %s)" % spread if released else
              " (NOT released together, start spread %s: the windows may not have overlapped)" % spread)
    return table(title, columns, rows, "no worker ran")
