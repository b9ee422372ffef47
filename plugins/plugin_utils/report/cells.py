"""What every dossier section is built of: a table cell, a field's cell, a table."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Dict, List, Optional

from .values import format_value
from ..result_fields import MISSING, is_unavailable, unavailable_reason


@dataclass(frozen=True)
class Cell:
    """Text for one table cell; note says why it is not a value; flag is "" or "bad", "warn", "na"."""

    text: str
    note: str = ""
    flag: str = ""


def cell(key: Optional[str], value: Any, flag: str = "") -> Cell:
    """A field's cell: its value with the unit its name declares, "—" when absent, "n/a" with the reason when unavailable."""
    if value is MISSING:
        return Cell("—", "not reported")
    if is_unavailable(value):
        return Cell("n/a", unavailable_reason(value), "na")
    return Cell(format_value(key, value), "", flag)


def table(title: str, columns: List[str], rows: List[List[Cell]], empty: str) -> Dict[str, Any]:
    """A table of a section's view (sections/tables.*.j2): empty says why when it has no row."""
    return {"title": title, "columns": columns, "rows": rows, "empty": empty}
