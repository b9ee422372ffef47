"""Reading a probe result's fields on the controller, shared by the judge and the report.

A field is a value, absent, or {"unavailable": reason} (schemas/common.schema.json); these say which, the same way
everywhere.
"""
from __future__ import annotations

from datetime import datetime
from typing import Any, Iterator, List, Optional, Sequence, Tuple, Union

# What dig returns for a path that is not there (None is a value a field may hold).
MISSING = object()
# A step of a path into a result: a key, or a position in a list.
PathPart = Union[str, int]


def is_unavailable(value: Any) -> bool:
    return isinstance(value, dict) and len(value) == 1 and "unavailable" in value


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


def json_path(parts: Sequence[PathPart]) -> str:
    """Dotted path with [i] for list items, e.g. gpus[0].clocks.sm_mhz."""
    text = ""
    for part in parts:
        if isinstance(part, int):
            text += "[%d]" % part
        else:
            text += ("." if text else "") + str(part)
    return text or "(data)"


def iter_leaves(value: Any, parts: Tuple[PathPart, ...] = ()) -> Iterator[Tuple[Tuple[PathPart, ...], Any]]:
    """Every leaf under value: scalars, unavailable fields, and empty containers (so that they show too)."""
    if is_unavailable(value):
        yield parts, value
    elif isinstance(value, dict) and value:
        for name, item in value.items():
            yield from iter_leaves(item, parts + (str(name),))
    elif isinstance(value, list) and value:
        for index, item in enumerate(value):
            yield from iter_leaves(item, parts + (index,))
    else:
        yield parts, value


def child_path(path: str, part: PathPart) -> str:
    """json_path of a path's child, built from the parent's text (a walk over every field builds each path once)."""
    if isinstance(part, int):
        return "%s[%d]" % (path, part)
    return "%s.%s" % (path, part) if path else str(part)


def unavailable_fields(data: Any) -> List[Tuple[str, str]]:
    """(JSON path, reason) of every unavailable field in data, in the order iter_leaves meets them."""
    found: List[Tuple[str, str]] = []

    def walk(value: Any, path: str) -> None:
        if isinstance(value, dict):
            if len(value) == 1 and "unavailable" in value:
                found.append((path or "(data)", unavailable_reason(value)))
                return
            for name, item in value.items():
                if isinstance(item, (dict, list)):
                    walk(item, child_path(path, str(name)))
        elif isinstance(value, list):
            for index, item in enumerate(value):
                if isinstance(item, (dict, list)):
                    walk(item, child_path(path, index))

    walk(data, "")
    return found


def error_words(error: Any) -> str:
    """A recorded error in words: common.schema.json's {type, message} as "type: message", text as it stands, "" for none."""
    if isinstance(error, dict):
        kind, message = str(error.get("type") or "error"), str(error.get("message") or "")
        return "%s: %s" % (kind, message) if message else kind
    return "" if error is None else str(error)


def iso_seconds(text: Any) -> Optional[float]:
    """An ISO 8601 time with its zone ('2026-12-03T10:00:00+00:00' or '...Z') as Unix seconds; None for anything else."""
    if not isinstance(text, str):
        return None
    try:
        moment = datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        return None
    return moment.timestamp() if moment.tzinfo is not None else None


# Where an envelope says when its probe started, by clock, the controller's first (issue 45)
START_FIELDS = (("controller", ("controller", "started")), ("host", ("started",)))


def start_interval(earlier: Any, now: Any) -> Tuple[Optional[float], str]:
    """(seconds from the earlier result's start to this one's, the clock they were read on). The controller's clock
    (each envelope's controller.started, written by the probe action, issue 45) when both results record it; the host's
    own (started) otherwise: a host clock a day ahead in one run made a counter's rise look a day old. None where either
    start is unknown."""
    for clock, path in START_FIELDS:
        then, current = iso_seconds(dig(earlier, *path)), iso_seconds(dig(now, *path))
        if then is not None and current is not None:
            return current - then, clock
    return None, "host"
