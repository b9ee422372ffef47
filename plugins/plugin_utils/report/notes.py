"""A page's numbered notes: each distinct reason a field could not be read is stated once, in the page's list of notes,
and every row or cell that has it refers to it by number ([1], [2], ...).

An NVML field that a GPU does not support is unavailable on every GPU of a host, in the health table, the unavailable
fields and every measurement: written out each time, one reason filled a dossier. The notes of the page being rendered
are found through a context variable, so that the cells built in Python (report/markup.py's cell_html) and the macros that
call them need no extra argument; a page rendered without notes (the fleet index) writes its reasons inline.
"""
from __future__ import annotations

import contextlib
from contextvars import ContextVar
from typing import Dict, Iterator, List, Optional, Tuple


class PageNotes:
    """The distinct reasons of one page, numbered from 1 in the order the page first refers to them."""

    def __init__(self) -> None:
        self._numbers: Dict[str, int] = {}

    def number(self, reason: str) -> int:
        found = self._numbers.get(reason)
        if found is None:
            found = self._numbers[reason] = len(self._numbers) + 1
        return found

    def items(self) -> List[Tuple[int, str]]:
        """(number, reason) of every note referred to so far, in number order."""
        return [(number, reason) for reason, number in self._numbers.items()]

    def __len__(self) -> int:
        return len(self._numbers)


_CURRENT: "ContextVar[Optional[PageNotes]]" = ContextVar("gpufleet_page_notes", default=None)


def current() -> Optional[PageNotes]:
    """The notes of the page being rendered; None outside collecting (reasons are then written where they apply)."""
    return _CURRENT.get()


@contextlib.contextmanager
def collecting(notes: PageNotes) -> Iterator[PageNotes]:
    """Render a page inside this block: its reasons are numbered into notes, which the page lists at its end."""
    token = _CURRENT.set(notes)
    try:
        yield notes
    finally:
        _CURRENT.reset(token)


def note_id(number: int) -> str:
    """The HTML id of a note in its page's list."""
    return "note-%d" % number
