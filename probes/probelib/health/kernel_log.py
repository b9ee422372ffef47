"""XID events from the kernel log: /dev/kmsg, then journalctl -k, then /var/log/kern.log."""
from __future__ import annotations

import collections
import datetime
import errno
import os
import re
import subprocess
import time
from typing import Any, Callable, Deque, Dict, List, Optional, Tuple

from probelib.fields import unavailable
from probelib.nvml.context import ReadContext
from probelib.system.sysfs import normalize_bus_id, optional_text

# XIDs that node health checks (aznhc, gcm, NHC) treat as hardware faults; see REFERENCE.md.
HARDWARE_XIDS = frozenset({48, 56, 57, 58, 62, 63, 64, 65, 68, 69, 73, 74, 79, 80, 81, 92, 94, 95, 119, 120})
JOURNALCTL_ARGV = ("journalctl", "-k", "--no-pager", "-o", "short-iso", "-n")
JOURNALCTL_TIMEOUT_S = 30.0

_XID = re.compile(r"NVRM: Xid \(PCI:(?P<pci>[0-9A-Fa-f]{4,8}:[0-9A-Fa-f]{2}:[0-9A-Fa-f]{2}(?:\.[0-7])?)\): "
                  r"(?P<xid>\d+), ?(?P<rest>.*)$")
_PID_NAME = re.compile(r"^pid=(?P<pid>'?[^,]*'?), name=(?P<name>[^,]*), ?(?P<message>.*)$")
_ISO_PREFIX = re.compile(r"^(\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(?:\.\d+)?(?:[+-]\d{2}:?\d{2}|Z)?)\s")
_SYSLOG_PREFIX = re.compile(r"^([A-Z][a-z]{2} [ \d]\d \d{2}:\d{2}:\d{2})\s")
_UPTIME_PREFIX = re.compile(r"\[\s*(\d+\.\d+)\]")


class SourceUnreadable(Exception):
    """A kernel-log source that cannot be read here, with the reason in words."""


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


def line_time(line: str) -> Optional[str]:
    for pattern in (_ISO_PREFIX, _SYSLOG_PREFIX):
        match = pattern.match(line)
        if match:
            return match.group(1)
    match = _UPTIME_PREFIX.search(line)
    return ("uptime %s s" % match.group(1)) if match else None


def kmsg_record_to_line(record: str, boot_time: Optional[float]) -> str:
    """'6,1234,5678901,-;text' (microseconds since boot) -> '<ISO time> text'."""
    header, unused_separator, text = record.partition(";")
    fields = header.split(",")
    text = text.split("\n", 1)[0]
    if len(fields) >= 3 and fields[2].isdigit():
        since_boot_s = int(fields[2]) / 1e6
        if boot_time is not None:
            stamp = datetime.datetime.fromtimestamp(boot_time + since_boot_s, datetime.timezone.utc)
            return "%s %s" % (stamp.isoformat(timespec="seconds"), text)
        return "[%.6f] %s" % (since_boot_s, text)
    return text


def read_kmsg(path: str, max_lines: int, boot_time: Optional[float]) -> List[str]:
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    except OSError as exc:
        raise SourceUnreadable("%s cannot be opened: %s" % (path, exc.strerror or exc)) from exc
    lines: Deque[str] = collections.deque(maxlen=max_lines)
    try:
        while True:
            try:
                chunk = os.read(fd, 16384)
            except OSError as exc:
                if exc.errno == errno.EAGAIN:
                    break
                if exc.errno == errno.EPIPE:  # the record was overwritten while we read; the next one follows
                    continue
                raise SourceUnreadable("%s cannot be read: %s" % (path, exc.strerror or exc)) from exc
            if not chunk:
                break
            lines.append(kmsg_record_to_line(chunk.decode("utf-8", "replace"), boot_time))
    finally:
        os.close(fd)
    return list(lines)


def read_journalctl(max_lines: int, runner: Callable[..., Any] = subprocess.run) -> List[str]:
    try:
        completed = runner(list(JOURNALCTL_ARGV) + [str(int(max_lines))], stdout=subprocess.PIPE,
                           stderr=subprocess.PIPE, shell=False, timeout=JOURNALCTL_TIMEOUT_S, check=False)
    except FileNotFoundError as exc:
        raise SourceUnreadable("journalctl is not installed") from exc
    except subprocess.TimeoutExpired as exc:
        raise SourceUnreadable("journalctl -k did not answer within %s s" % JOURNALCTL_TIMEOUT_S) from exc
    stderr = completed.stderr.decode("utf-8", "replace").strip()
    if completed.returncode != 0:
        raise SourceUnreadable("journalctl -k exited with %d: %s" % (completed.returncode, stderr[-300:]))
    if "not seeing messages from other users" in stderr or "No journal files were found" in stderr:
        raise SourceUnreadable("journalctl -k shows no kernel messages to this user: %s" % stderr[-300:])
    return completed.stdout.decode("utf-8", "replace").splitlines()


def read_kern_log(path: str, max_lines: int) -> List[str]:
    try:
        with open(path, "rb") as handle:
            handle.seek(0, os.SEEK_END)
            size = handle.tell()
            handle.seek(max(0, size - max_lines * 400))
            text = handle.read().decode("utf-8", "replace")
    except OSError as exc:
        raise SourceUnreadable("%s cannot be read: %s" % (path, exc.strerror or exc)) from exc
    return text.splitlines()[-max_lines:]


def boot_time_from_uptime(proc_root: str) -> Optional[float]:
    uptime = optional_text(os.path.join(proc_root, "uptime"))
    if not uptime:
        return None
    return time.time() - float(uptime.split()[0])


def restriction_hint(proc_root: str) -> str:
    restrict = optional_text(os.path.join(proc_root, "sys", "kernel", "dmesg_restrict"))
    root = os.geteuid() == 0
    if restrict == "1" and not root:
        return "dmesg_restrict=1 and not root"
    return "dmesg_restrict=%s, %s" % (restrict if restrict is not None else "unknown", "root" if root else "not root")


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
    return {
        "source": source,
        "lines_read": len(lines),
        "attempts": attempts,
        "xid_events": events,
        "xid_counts": dict(sorted(counts.items(), key=lambda item: int(item[0]))),
        "hardware_xid_count": sum(1 for event in events if event["hardware"]),
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
