# -*- coding: utf-8 -*-
# Copyright: gpufleet.validation contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Ordering two firmware versions of one kind, for a baseline's minimum. Pure Python.

NVIDIA's versions are dot-separated fields: VBIOS 96.00.A5.00.1A (hexadecimal fields), GSP firmware 580.159.04
(decimal, the driver's), InfoROM image G520.0282.02.02 (a board prefix, then numbers). A field of hexadecimal digits
is compared as a hexadecimal number, which orders decimal-digit fields as decimals do; any other field must be equal.
"""
from __future__ import annotations

import re
from typing import List, Optional, Tuple

_HEX = re.compile(r"^[0-9A-Fa-f]+$")


def _fields(version: str) -> List[Tuple[int, str]]:
    """(0, hexadecimal digits, leading zeros stripped) or (1, any other text) per dot-separated field."""
    return [(0, part.lstrip("0").upper() or "0") if _HEX.match(part) else (1, part) for part in version.strip().split(".")]


def compare_versions(first: str, second: str) -> Optional[int]:
    """-1, 0 or 1 as first is older than, equal to or newer than second; None when they cannot be ordered (another
    number of fields, or a non-numeric field that differs: another board's InfoROM)."""
    left, right = _fields(first), _fields(second)
    if len(left) != len(right):
        return None
    for (left_kind, left_text), (right_kind, right_text) in zip(left, right):
        if left_kind != right_kind:
            return None
        if left_text == right_text:
            continue
        if left_kind == 1:
            return None
        return -1 if int(left_text, 16) < int(right_text, 16) else 1
    return 0
