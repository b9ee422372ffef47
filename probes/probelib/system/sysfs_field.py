"""One /sys or /proc file read into a field: its value, or ``{"unavailable": why}`` naming the file and what went wrong
(shared by the probes that read sysfs: tuning, fabric)."""
from __future__ import annotations

import errno
import os
import re
from typing import Any, Callable, Optional

from probelib.fields import unavailable
from probelib.system.sysfs import read_text

VALUE_FILE_LIMIT_BYTES = 64 << 10
_WHOLE_NUMBER = re.compile(r"^-?[0-9]+\Z")


def read_value(path: str, parse: Callable[[str], Any], missing: str = "this kernel or driver does not offer it",
               invalid: Optional[str] = None, unreadable: str = "is not readable by this user") -> Any:
    """parse(the file's stripped text), or unavailable naming the file and why; parse raises ValueError with words.
    invalid: what EINVAL on read means for this file (the kernel refuses some reads, e.g. carrier of a device that is
    down, rate of a port without a valid speed); unreadable: what a permission error says after the path."""
    try:
        text = read_text(path, VALUE_FILE_LIMIT_BYTES).strip()
    except FileNotFoundError:
        return unavailable("%s is missing (%s)" % (path, missing))
    except PermissionError:
        return unavailable("%s %s" % (path, unreadable))
    except OSError as exc:
        if exc.errno == errno.EINVAL and invalid:
            return unavailable("%s: the kernel refuses the read (EINVAL): %s" % (path, invalid))
        return unavailable("%s could not be read: %s" % (path, exc.strerror or exc))
    try:
        return parse(text)
    except ValueError as exc:
        return unavailable("%s reads %r: %s" % (path, text[:80], exc))


def matched(pattern: re.Pattern[str], text: str, refusal: str) -> re.Match[str]:
    """The pattern's match in a file's text (a parse of read_value), else ValueError(refusal): what the text is not."""
    match = pattern.search(text)
    if not match:
        raise ValueError(refusal)
    return match


def whole_number(text: str) -> int:
    return int(matched(_WHOLE_NUMBER, text, "not a whole number").group(0))


def nonempty_text(text: str) -> str:
    if not text:
        raise ValueError("empty")
    return text


def link_target_name(path: str) -> Optional[str]:
    """The last part of the symlink's target (a driver's or a device's name), or None where there is no link."""
    try:
        return os.path.basename(os.readlink(path))
    except OSError:
        return None
