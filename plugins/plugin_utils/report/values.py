"""Turn probe values into text a person reads: units from field-name suffixes, unavailable fields as their reason."""
from __future__ import annotations

import functools
from typing import Any, List, NamedTuple, Optional, Tuple, Union

from . import number_format
from ..result_fields import child_path, is_unavailable, unavailable_reason

# Longest suffix first, so that "_gbps" wins over "_s" and "_mib" over "_b".
UNIT_SUFFIXES: Tuple[Tuple[str, str], ...] = tuple(sorted((
    ("_bytes", "B"),
    ("_kib", "KiB"),
    ("_mib", "MiB"),
    ("_gib", "GiB"),
    ("_mhz", "MHz"),
    ("_gbps", "GB/s"),
    ("_gbitps", "Gb/s"),
    ("_mbps", "Mb/s"),
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
    return _unit_of_name(key)


@functools.lru_cache(maxsize=4096)  # a report asks for the same few hundred field names again for every GPU and host
def _unit_of_name(key: str) -> str:
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


def _section(section: Optional[str]) -> str:
    return "(data)" if section is None else section


class FlatRow(NamedTuple):
    """One leaf of a probe's data: where it is, its value as text, its unit, and why it is missing if it is."""

    path: str
    value: str
    unit: str
    unavailable: Optional[str]
    section: str


def flatten(data: Any) -> List[FlatRow]:
    """Rows for the "every measurement" table: every value in data with its unit, every unavailable field with its reason.

    The leaves of iter_leaves, in its order; each path is built once from its parent's (a dossier of 8 GPUs has
    thousands of rows, and this walk was a fifth of its cost). A list item takes its unit from the list's name.
    """
    rows: List[FlatRow] = []
    append = rows.append
    new_row = tuple.__new__  # FlatRow(...) without the Python frame of a NamedTuple's __new__: a tenth of the walk

    def walk(value: Any, path: str, section: Optional[str], key: Optional[str]) -> None:
        # path "" is the data itself (json_path's "(data)"); section None: not below a first part yet
        if isinstance(value, dict) and value:
            if len(value) == 1 and "unavailable" in value:
                append(new_row(FlatRow, (path or "(data)", "unavailable", "", unavailable_reason(value), _section(section))))
                return
            for name, item in value.items():
                name = str(name)
                walk(item, child_path(path, name), name if section is None else section, name)
        elif isinstance(value, list) and value:
            for index, item in enumerate(value):
                walk(item, child_path(path, index), str(index) if section is None else section, key)
        elif isinstance(value, (dict, list)):
            append(new_row(FlatRow, (path or "(data)", "(empty)", "", None, _section(section))))
        elif isinstance(value, (int, float)) and not isinstance(value, bool):
            append(new_row(FlatRow, (path or "(data)", format_scalar(value), unit_for(key), None, _section(section))))
        else:
            append(new_row(FlatRow, (path or "(data)", format_scalar(value), "", None, _section(section))))

    walk(data, "", None, None)
    return rows
