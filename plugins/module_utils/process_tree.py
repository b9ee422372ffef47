# -*- coding: utf-8 -*-
# Copyright: gpufleet.validation contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""This process's descendants, even those that left its children's process group (Linux: subreaper and /proc).

Pure Python (standard library only). A probe that double-forks a ``setsid`` daemon takes the daemon out of its process
group and, once the middle process exits, out of its family too: the kernel hands an orphan to its nearest ancestor
that is a *child subreaper* (``prctl(PR_SET_CHILD_SUBREAPER)``), else to init. With this process a subreaper, every
process the probe started stays one of its descendants, found through the parent pids in ``/proc``.
"""
from __future__ import annotations

import ctypes
import os
import sys

PR_SET_PDEATHSIG = 1
PR_SET_CHILD_SUBREAPER = 36
PR_GET_CHILD_SUBREAPER = 37


class ProcessInfo(object):
    def __init__(self, pid, ppid, pgid, state, name):
        self.pid = pid
        self.ppid = ppid
        self.pgid = pgid
        self.state = state
        self.name = name

    @property
    def zombie(self):
        return self.state in ("Z", "X")


def _prctl():
    if not sys.platform.startswith("linux"):
        return None
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        return libc.prctl
    except (OSError, AttributeError):
        return None


def child_subreaper():
    """Whether this process is a child subreaper now; None where that cannot be asked (not Linux)."""
    prctl = _prctl()
    if prctl is None:
        return None
    flag = ctypes.c_int(0)
    if prctl(PR_GET_CHILD_SUBREAPER, ctypes.byref(flag), 0, 0, 0) != 0:
        return None
    return bool(flag.value)


def set_child_subreaper(enabled):
    """Make this process a child subreaper (or stop being one); False where the system cannot."""
    prctl = _prctl()
    if prctl is None:
        return False
    return prctl(PR_SET_CHILD_SUBREAPER, ctypes.c_ulong(1 if enabled else 0), 0, 0, 0) == 0


def set_parent_death_signal(signum):
    """Have the kernel send signum to this process when the thread that forked it ends (its parent dies, even by
    SIGKILL); False where the system cannot."""
    prctl = _prctl()
    if prctl is None:
        return False
    return prctl(PR_SET_PDEATHSIG, ctypes.c_ulong(int(signum)), 0, 0, 0) == 0


def start_ticks(pid):
    """The process's start time in clock ticks since boot (field 22 of /proc/PID/stat); None where /proc has no answer."""
    try:
        with open("/proc/%d/stat" % pid, "rb") as handle:
            return int(handle.read().rpartition(b")")[2].split()[19])
    except (OSError, IndexError, ValueError):
        return None


def still_running(pid, recorded_ticks):
    """Whether pid is still the process recorded with recorded_ticks (its start time; None: any process of that pid):
    a pid the kernel handed to a new process has another start time."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        pass
    return recorded_ticks is None or start_ticks(pid) in (None, recorded_ticks)


def process_table():
    """{pid: ProcessInfo} of every process /proc shows; None where there is no /proc."""
    try:
        entries = os.listdir("/proc")
    except OSError:
        return None
    table = {}
    for entry in entries:
        if not entry.isdigit():
            continue
        try:
            with open("/proc/%s/stat" % entry, "rb") as handle:
                stat = handle.read()
        except OSError:
            continue  # it ended while we looked
        # "pid (comm) state ppid pgrp ...": comm may hold spaces and parentheses, so split at the last ")".
        head, unused_sep, tail = stat.rpartition(b")")
        fields = tail.split()
        if len(fields) < 3:
            continue
        name = head.partition(b"(")[2].decode("utf-8", "backslashreplace")
        state = fields[0].decode("ascii", "replace")
        table[int(entry)] = ProcessInfo(int(entry), int(fields[1]), int(fields[2]), state, name)
    return table


def descendants(table, root_pid, excluded=()):
    """Pids of the descendants of ``root_pid`` in ``table``, leaving out the subtrees of the pids in ``excluded``."""
    children = {}
    for info in table.values():
        children.setdefault(info.ppid, []).append(info.pid)
    found = []
    pending = [pid for pid in children.get(root_pid, []) if pid not in excluded]
    while pending:
        pid = pending.pop()
        found.append(pid)
        pending.extend(child for child in children.get(pid, []) if child not in excluded)
    return found
