"""One /proc or /sys file read into a value, or into the reason it could not be: missing, unreadable, or not parseable."""
from __future__ import annotations

import re
from typing import Any, Callable

from probelib.system import sysfs_field
from probelib.system.sysfs_field import matched

_SPEED = re.compile(r"^(\d+(?:\.\d+)?)\s*GT/s")
_BRACKETED = re.compile(r"\[([^\]]+)\]")
_LANES = re.compile(r"^x?([0-9]+)\Z")


def read_value(path: str, parse: Callable[[str], Any], missing: str = "this kernel does not offer it") -> Any:
    """The shared reader (probelib.system.sysfs_field), whose permission error tells how the tuning probe reads it."""
    return sysfs_field.read_value(path, parse, missing, unreadable="is not readable by this user; run the tuning probe with "
                                  "become (gpufleet_become_probes: [tuning])")


def bracketed_choice(text: str) -> str:
    """'always [madvise] never' -> 'madvise': the kernel marks the active choice of a list with brackets."""
    return matched(_BRACKETED, text, "no [bracketed] choice").group(1).strip()


def link_speed_gts(text: str) -> float:
    """'32.0 GT/s PCIe' (kernel 4.19 on) or '8 GT/s' -> GT/s per lane; 'Unknown' (link down, or not reported) refused."""
    return float(matched(_SPEED, text, "not a link speed in GT/s (the kernel writes 'Unknown' when the link reports none)").group(1))


def lane_count(text: str) -> int:
    """'16' -> 16; the kernel writes the width as a plain number, 'x16' is accepted too."""
    return int(matched(_LANES, text, "not a lane count").group(1))
