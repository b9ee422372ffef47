"""One /proc or /sys file read into a value, or into the reason it could not be: missing, unreadable, or not parseable."""
from __future__ import annotations

import re
from typing import Any, Callable

from probelib.system import sysfs_field

_SPEED = re.compile(r"^(\d+(?:\.\d+)?)\s*GT/s")
_BRACKETED = re.compile(r"\[([^\]]+)\]")


def read_value(path: str, parse: Callable[[str], Any], missing: str = "this kernel does not offer it") -> Any:
    """The shared reader (probelib.system.sysfs_field), whose permission error tells how the tuning probe reads it."""
    return sysfs_field.read_value(path, parse, missing, unreadable="is not readable by this user; run the tuning probe with "
                                  "become (gpufleet_become_probes: [tuning])")


def bracketed_choice(text: str) -> str:
    """'always [madvise] never' -> 'madvise': the kernel marks the active choice of a list with brackets."""
    match = _BRACKETED.search(text)
    if not match:
        raise ValueError("no [bracketed] choice")
    return match.group(1).strip()


def link_speed_gts(text: str) -> float:
    """'32.0 GT/s PCIe' (kernel 4.19 on) or '8 GT/s' -> GT/s per lane; 'Unknown' (link down, or not reported) refused."""
    match = _SPEED.match(text)
    if not match:
        raise ValueError("not a link speed in GT/s (the kernel writes 'Unknown' when the link reports none)")
    return float(match.group(1))


def lane_count(text: str) -> int:
    """'16' -> 16; the kernel writes the width as a plain number, 'x16' is accepted too."""
    number = text[1:] if text.startswith("x") else text
    if not re.fullmatch(r"[0-9]+", number):
        raise ValueError("not a lane count")
    return int(number)
