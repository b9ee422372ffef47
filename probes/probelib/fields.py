"""Every field is a value or ``{"unavailable": "<reason>"}``; these helpers keep it that way."""
from __future__ import annotations

from typing import Any, Callable, Dict, Iterable, List, Optional


def unavailable(reason: str) -> Dict[str, str]:
    return {"unavailable": reason}


def is_unavailable(value: Any) -> bool:
    return isinstance(value, dict) and set(value) == {"unavailable"}


def is_number(value: Any) -> bool:
    """A JSON number: an int or a float, never a boolean."""
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def number_or_none(value: Any) -> Optional[float]:
    """A JSON number as a float; None for anything else (null, an unavailable field, a boolean, a string)."""
    return float(value) if is_number(value) else None


def numbers(values: Iterable[Any]) -> List[float]:
    """The JSON numbers among ``values``, as floats (a failed read, None or unavailable, is left out)."""
    return [float(value) for value in values if is_number(value)]


def read_field(reader: Callable[[], Any], what: str) -> Any:
    """Call ``reader``; an exception becomes an unavailable field naming ``what`` and the error."""
    try:
        return reader()
    except Exception as exc:  # each field fails alone
        return unavailable("%s could not be read: %s" % (what, _describe(exc)))


def _describe(exc: BaseException) -> str:
    text = str(exc).strip()
    name = type(exc).__name__
    return "%s: %s" % (name, text) if text else name


class SectionErrors:
    """Collects sections that raised, so that one broken section does not abort the probe."""

    def __init__(self) -> None:
        self.errors: List[Dict[str, str]] = []

    def run(self, section: str, reader: Callable[[], Any]) -> Any:
        try:
            return reader()
        except Exception as exc:
            reason = "section %s failed: %s" % (section, _describe(exc))
            self.errors.append({"section": section, "error": _describe(exc)})
            return unavailable(reason)
