"""Reading the kernel log: /dev/kmsg, then journalctl -k, then /var/log/kern.log, as lines with their time stamps."""
from __future__ import annotations

import collections
import datetime
import errno
import os
import re
import subprocess
import time
from typing import Any, Callable, Deque, List, Optional

from probelib.system.sysfs import optional_text

JOURNALCTL_ARGV = ("journalctl", "-k", "--no-pager", "-o", "short-iso", "-n")
JOURNALCTL_TIMEOUT_S = 30.0

_ISO_PREFIX = re.compile(r"^(\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(?:\.\d+)?(?:[+-]\d{2}:?\d{2}|Z)?)\s")
_SYSLOG_PREFIX = re.compile(r"^([A-Z][a-z]{2} [ \d]\d \d{2}:\d{2}:\d{2})\s")
_UPTIME_PREFIX = re.compile(r"\[\s*(\d+\.\d+)\]")


class SourceUnreadable(Exception):
    """A kernel-log source that cannot be read here, with the reason in words."""


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
