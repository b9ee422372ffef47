"""XID events and the other classified kernel-log lines, from the kernel log kernel_log_reader.py reads."""
from __future__ import annotations

import collections
import os
import re
from typing import Any, Callable, Dict, List, Optional, Tuple

from probe_packages.health.kernel_log_classify import classify_lines
from probe_packages.health.kernel_log_reader import (SourceUnreadable, boot_time_from_uptime, line_time, read_journalctl,
                                                     read_kern_log, read_kmsg, restriction_hint)
from probelib.fields import unavailable
from probelib.nvml.context import ReadContext
from probelib.system.sysfs import normalize_bus_id

# XIDs that node health checks (aznhc, gcm, NHC) treat as hardware faults; see REFERENCE.md.
HARDWARE_XIDS = frozenset({48, 56, 57, 58, 62, 63, 64, 65, 68, 69, 73, 74, 79, 80, 81, 92, 94, 95, 119, 120})

_XID = re.compile(r"NVRM: Xid \(PCI:(?P<pci>[0-9A-Fa-f]{4,8}:[0-9A-Fa-f]{2}:[0-9A-Fa-f]{2}(?:\.[0-7])?)\): "
                  r"(?P<xid>\d+), ?(?P<rest>.*)$")
_PID_NAME = re.compile(r"^pid=(?P<pid>'?[^,]*'?), name=(?P<name>[^,]*), ?(?P<message>.*)$")


def parse_xid_line(line: str) -> Optional[Dict[str, Any]]:
    match = _XID.search(line)
    if not match:
        return None
    xid = int(match.group("xid"))
    rest = match.group("rest").strip()
    event: Dict[str, Any] = {"xid": xid, "pci_bus_id": _bus_id(match.group("pci")), "pid": None,
                             "process_name": None, "message": rest, "hardware": xid in HARDWARE_XIDS,
                             "time": line_time(line)}
    detail = _PID_NAME.match(rest)
    if detail:
        pid = detail.group("pid").strip("'")
        event["pid"] = int(pid) if pid.isdigit() else None
        name = detail.group("name").strip()
        event["process_name"] = None if name in ("", "<unknown>") else name
        event["message"] = detail.group("message").strip()
    return event


def _bus_id(text: str) -> str:
    try:
        return normalize_bus_id(text)
    except ValueError:
        return text


def summarize(source: str, lines: List[str], attempts: List[Dict[str, str]],
              bus_ids: List[Any]) -> Dict[str, Any]:
    events = [event for event in (parse_xid_line(line) for line in lines) if event is not None]
    index_by_bus = {}
    for index, bus_id in enumerate(bus_ids):
        if isinstance(bus_id, str):
            index_by_bus[bus_id] = index
    for event in events:
        event["gpu_index"] = index_by_bus.get(event["pci_bus_id"])
    counts = collections.Counter(str(event["xid"]) for event in events)
    classified = classify_lines(lines)
    return {
        "source": source,
        "lines_read": len(lines),
        "attempts": attempts,
        "xid_events": events,
        "xid_counts": dict(sorted(counts.items(), key=lambda item: int(item[0]))),
        "hardware_xid_count": sum(1 for event in events if event["hardware"]),
        "events": classified["events"],
        "counts": classified["counts"],
        "events_not_recorded": classified["events_not_recorded"],
    }


def collect_kernel_log(context: ReadContext, bus_ids: Optional[List[Any]] = None,
                       journal_reader: Callable[[int], List[str]] = read_journalctl) -> Any:
    roots = context.roots
    max_lines = int(context.params.get("kernel_log_lines", 20000))
    kmsg_path = os.path.join(roots.dev, "kmsg")
    kern_log_path = os.path.join(roots.var_log, "kern.log")
    sources: List[Tuple[str, Callable[[], List[str]]]] = [
        (kmsg_path, lambda: read_kmsg(kmsg_path, max_lines, boot_time_from_uptime(roots.proc))),
        ("journalctl -k", lambda: journal_reader(max_lines)),
        (kern_log_path, lambda: read_kern_log(kern_log_path, max_lines)),
    ]
    attempts: List[Dict[str, str]] = []
    for source, read in sources:
        try:
            lines = read()
        except SourceUnreadable as exc:
            attempts.append({"source": source, "error": str(exc)})
            continue
        return summarize(source, lines, attempts, bus_ids or [])
    return unavailable("no kernel log is readable here (%s): %s" % (
        restriction_hint(roots.proc), "; ".join("%s: %s" % (a["source"], a["error"]) for a in attempts)))
