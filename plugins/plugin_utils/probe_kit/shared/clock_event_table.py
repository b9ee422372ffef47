"""The per-GPU table of clock-event (throttle) time that the health and load dossier sections show: seconds in each
reason, since the driver loaded (health) or over the load window (load, with the share of the window)."""
from __future__ import annotations

from typing import Any, Dict, List

from ...report.number_format import format_quantity
from ...report.cells import Cell, cell, table
from ...result_fields import MISSING, dig, is_unavailable, number_or_none, unavailable_reason

REASON_COLUMNS = ("sw_power_cap", "sync_boost", "sw_thermal_slowdown", "hw_thermal_slowdown", "hw_power_brake_slowdown")
SLOWDOWN_COLUMNS = ("sw_thermal_slowdown", "hw_thermal_slowdown", "hw_power_brake_slowdown")


def duration_cell(entry: Any, name: str, flag: str) -> Cell:
    """'12 s (20 %)'; n/a with the reason when unread; the slowdown reasons flagged when non-zero."""
    if entry is MISSING or is_unavailable(entry):
        return cell(name, entry)
    seconds = number_or_none(dig(entry, "s"))
    if seconds is None:
        return Cell("—", "not reported")
    share = number_or_none(dig(entry, "share_pct"))
    text = format_quantity(seconds, "s") + (" (%s)" % format_quantity(share, "%") if share is not None else "")
    source = dig(entry, "source")
    return Cell(text, source if isinstance(source, str) else "", flag if name in SLOWDOWN_COLUMNS and seconds > 0 else "")


def clock_event_table(gpus: List[Any], key: str, title: str, first_column: str, flag: str) -> Dict[str, Any]:
    """One row per GPU that has ``key`` (clock_event_durations or clock_event_durations_window)."""
    rows = []
    for position, gpu in enumerate(gpus):
        durations = dig(gpu, key)
        if durations is MISSING:
            continue
        index = dig(gpu, "index")
        label = Cell("GPU %s" % (index if isinstance(index, int) else position))
        if is_unavailable(durations):
            rows.append([label, cell(first_column, dig(durations, first_column))] +
                        [Cell("n/a", unavailable_reason(durations), "na") for unused in REASON_COLUMNS])
            continue
        rows.append([label, cell(first_column, dig(durations, first_column))] +
                    [duration_cell(dig(durations, "reasons", name), name, flag) for name in REASON_COLUMNS])
    return table(title, ["GPU", first_column] + list(REASON_COLUMNS), rows, "no clock-event duration counters recorded")
