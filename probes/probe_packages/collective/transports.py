"""The transports NCCL chose, read from its INFO lines, e.g.

    host:123:456 [0] NCCL INFO Channel 00/0 : 0[0] -> 1[1] via P2P/CUMEM/read
    host:123:456 [0] NCCL INFO Channel 00 : 0[0] -> 1[1] via SHM/direct/direct
    host:123:456 [0] NCCL INFO Channel 00/0 : 0[0] -> 2[0] [send] via NET/IB/0/GDRDMA

P2P and NET keep their mechanism (P2P/CUMEM, P2P/IPC, P2P/direct pointer, NET/IB, NET/Socket); SHM's two
words are the send and receive copy modes, so SHM is kept alone. Pure Python.
"""
from __future__ import annotations

import re
from typing import Iterable, List, Optional

MAX_LINES = 20
MARKER = "NCCL INFO "
_VIA = re.compile(r" via (\S.*?)\s*$")


def via_lines(text: str) -> List[str]:
    """Distinct 'NCCL INFO ... via ...' lines, from 'NCCL INFO' on (so host and pid prefixes do not repeat), in order."""
    found: List[str] = []
    seen = set()
    for raw in text.splitlines():
        start = raw.find(MARKER)
        if start < 0 or " via " not in raw[start:]:
            continue
        line = raw[start:].strip()
        if line not in seen:
            seen.add(line)
            found.append(line)
    return found


def kept_lines(lines: List[str], limit: int = MAX_LINES) -> List[str]:
    """At most ``limit`` of ``lines`` in their order: the first line of every transport, then the earliest others."""
    chosen = set()
    named = set()
    for index, line in enumerate(lines):
        name = _name_or_none(line)
        if name is not None and name not in named and len(chosen) < limit:
            named.add(name)
            chosen.add(index)
    for index in range(len(lines)):
        if len(chosen) >= limit:
            break
        chosen.add(index)
    return [lines[index] for index in sorted(chosen)]


def transport_of(line: str) -> str:
    """'... via P2P/CUMEM/read' -> 'P2P/CUMEM'; '... via SHM/direct/direct' -> 'SHM'; '... via NET/IB/0/GDRDMA' -> 'NET/IB'."""
    match = _VIA.search(line)
    if not match:
        raise ValueError("no ' via ' in %r" % line)
    parts = match.group(1).split("/")
    if parts[0] in ("P2P", "NET") and len(parts) > 1:
        return "%s/%s" % (parts[0], parts[1])
    return parts[0]


def transports(lines: Iterable[str]) -> List[str]:
    """The distinct transports of ``lines`` in the order they first appear."""
    found: List[str] = []
    for line in lines:
        name = _name_or_none(line)
        if name is not None and name not in found:
            found.append(name)
    return found


def _name_or_none(line: str) -> Optional[str]:
    try:
        return transport_of(line)
    except ValueError:
        return None
