"""Reading a probe result's fields on the controller, shared by the judge and the report.

A field is a value, absent, or {"unavailable": reason} (schemas/common.schema.json); these say which, the same way
everywhere.
"""
from __future__ import annotations

from typing import Any, Optional

# What dig returns for a path that is not there (None is a value a field may hold).
MISSING = object()


def is_unavailable(value: Any) -> bool:
    return isinstance(value, dict) and set(value) == {"unavailable"}


def unavailable_reason(value: Any) -> str:
    reason = value.get("unavailable") if isinstance(value, dict) else None
    return str(reason) if reason not in (None, "") else "no reason given"


def dig(value: Any, *path: Any) -> Any:
    """The value at path (keys and list positions), MISSING if absent; a field under an unavailable section is that
    section's unavailable."""
    for step in path:
        if is_unavailable(value):
            return value
        if isinstance(step, int) and isinstance(value, list) and -len(value) <= step < len(value):
            value = value[step]
        elif isinstance(step, str) and isinstance(value, dict) and step in value:
            value = value[step]
        else:
            return MISSING
    return value


def number_or_none(value: Any) -> Optional[float]:
    """A JSON number as a float; None for anything else (a boolean is not a number)."""
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return float(value)
    return None
