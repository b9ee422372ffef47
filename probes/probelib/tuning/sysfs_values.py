"""One /proc or /sys file read into a value, or into the reason it could not be: missing, unreadable, or not parseable."""
from __future__ import annotations

import re
from typing import Any, Callable

from probelib.fields import unavailable
from probelib.system.sysfs import read_text

VALUE_FILE_LIMIT_BYTES = 64 << 10
_SPEED = re.compile(r"^(\d+(?:\.\d+)?)\s*GT/s")
_BRACKETED = re.compile(r"\[([^\]]+)\]")


def read_value(path: str, parse: Callable[[str], Any], missing: str = "this kernel does not offer it") -> Any:
    """parse(the file's stripped text), or unavailable naming the file and why; parse raises ValueError with words."""
    try:
        text = read_text(path, VALUE_FILE_LIMIT_BYTES).strip()
    except FileNotFoundError:
        return unavailable("%s is missing (%s)" % (path, missing))
    except PermissionError:
        return unavailable("%s is not readable by this user; run the tuning probe with become "
                           "(gpufleet_become_probes: [tuning])" % path)
    except OSError as exc:
        return unavailable("%s could not be read: %s" % (path, exc.strerror or exc))
    try:
        return parse(text)
    except ValueError as exc:
        return unavailable("%s reads %r: %s" % (path, text[:80], exc))


def whole_number(text: str) -> int:
    if not re.fullmatch(r"-?[0-9]+", text):
        raise ValueError("not a whole number")
    return int(text)


def bracketed_choice(text: str) -> str:
    """'always [madvise] never' -> 'madvise': the kernel marks the active choice of a list with brackets."""
    match = _BRACKETED.search(text)
    if not match:
        raise ValueError("no [bracketed] choice")
    return match.group(1).strip()


def nonempty_text(text: str) -> str:
    if not text:
        raise ValueError("empty")
    return text


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
