"""Turn probe values into text a person reads: units from field-name suffixes, unavailable fields as their reason."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, List, Optional, Sequence, Tuple, Union

from . import number_format
from .result_fields import PathPart, is_unavailable, iter_leaves, json_path, unavailable_reason

# Longest suffix first, so that "_gbps" wins over "_s" and "_mib" over "_b".
UNIT_SUFFIXES: Tuple[Tuple[str, str], ...] = tuple(sorted((
    ("_bytes", "B"),
    ("_kib", "KiB"),
    ("_mib", "MiB"),
    ("_gib", "GiB"),
    ("_mhz", "MHz"),
    ("_gbps", "GB/s"),
    ("_tflops", "TFLOP/s"),
    ("_pct", "%"),
    ("_w", "W"),
    ("_mw", "mW"),
    ("_c", "°C"),
    ("_s", "s"),
    ("_ms", "ms"),
    ("_us", "µs"),
    ("_ns", "ns"),
), key=lambda pair: -len(pair[0])))

RATE_SUFFIX = "_per_s"


def unit_for(key: Optional[str]) -> str:
    """The unit a field name declares by its suffix, or "" when it declares none."""
    if not isinstance(key, str):
        return ""
    lowered = key.lower()
    if lowered.endswith(RATE_SUFFIX) and len(lowered) > len(RATE_SUFFIX):
        # a rate names what it counts: items_per_s is items/s, not seconds
        return lowered[:-len(RATE_SUFFIX)].rsplit("_", 1)[-1] + "/s"
    for suffix, unit in UNIT_SUFFIXES:
        if lowered.endswith(suffix) and len(lowered) > len(suffix):
            return unit
    return ""


def format_number(number: Union[int, float]) -> str:
    """Integers exactly; floats to three significant digits, never fewer integer digits (number_format.py)."""
    if isinstance(number, bool):
        return format_scalar(number)
    return number_format.format_number(number)


def format_scalar(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, (int, float)):
        return format_number(value)
    return str(value)


def format_value(key: Optional[str], value: Any) -> str:
    """One value as text with the unit its field name declares; an unavailable field reads as its reason."""
    if is_unavailable(value):
        return "unavailable: %s" % unavailable_reason(value)
    if isinstance(value, list):
        if not value:
            return "none"
        return ", ".join(format_value(key, item) for item in value)
    if isinstance(value, dict):
        if not value:
            return "none"
        return "; ".join("%s: %s" % (name, format_value(name, item)) for name, item in value.items())
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return number_format.format_quantity(value, unit_for(key))
    return format_scalar(value)


@dataclass(frozen=True)
class FlatRow:
    """One leaf of a probe's data: where it is, its value as text, its unit, and why it is missing if it is."""

    path: str
    value: str
    unit: str
    unavailable: Optional[str]
    section: str


def _named_key(parts: Sequence[PathPart]) -> Optional[str]:
    """The nearest field name along a path: list items take their unit from the list's name."""
    for part in reversed(parts):
        if isinstance(part, str):
            return part
    return None


def flatten(data: Any) -> List[FlatRow]:
    """Rows for the "every measurement" table: every value in data with its unit, every unavailable field with its reason."""
    rows = []
    for parts, value in iter_leaves(data):
        section = str(parts[0]) if parts else "(data)"
        key = _named_key(parts)
        if is_unavailable(value):
            rows.append(FlatRow(json_path(parts), "unavailable", "", unavailable_reason(value), section))
            continue
        if isinstance(value, (dict, list)):
            text = "(empty)"
        else:
            text = format_scalar(value)
        numeric = isinstance(value, (int, float)) and not isinstance(value, bool)
        rows.append(FlatRow(json_path(parts), text, unit_for(key) if numeric else "", None, section))
    return rows
