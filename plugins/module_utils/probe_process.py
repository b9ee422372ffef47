# -*- coding: utf-8 -*-
# Copyright: gpufleet.validation contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Run one probe process: argv list, no shell, own process group, a timeout that kills the group.

Pure Python (standard library only), so the engine's failure modes are unit-tested with real processes.
"""
from __future__ import annotations

import os
import signal
import subprocess
import time

from ansible_collections.gpufleet.validation.plugins.module_utils.process_tree import (
    child_subreaper,
    descendants,
    process_table,
    set_child_subreaper,
)
from ansible_collections.gpufleet.validation.plugins.module_utils.probe_output_text import transportable

KILL_GRACE_S = 5.0


class ProcessOutcome(object):
    """How the probe process ended, and what it left running."""

    def __init__(self, argv, returncode, timed_out, duration_s, spawn_error=None, stragglers=(), timeout_s=None,
                 descendants_tracked=True, group_killed=False):
        self.argv = list(argv)
        self.timeout_s = timeout_s
        self.returncode = returncode
        self.timed_out = timed_out
        self.duration_s = duration_s
        self.spawn_error = spawn_error
        self.stragglers = list(stragglers)  # (pid, command name) of every process killed after the probe ended
        self.descendants_tracked = descendants_tracked  # False: only the process group could be killed (no subreaper)
        self.group_killed = group_killed  # something was still running in the probe's group and was killed

    @property
    def stragglers_killed(self):
        return bool(self.stragglers) or self.group_killed

    @property
    def signal_number(self):
        if self.returncode is not None and self.returncode < 0:
            return -self.returncode
        return None

    @property
    def signal_name(self):
        number = self.signal_number
        if number is None:
            return None
        try:
            return signal.Signals(number).name
        except ValueError:
            return "signal %d" % number


def _kill_group(pgid, sig):
    try:
        os.killpg(pgid, sig)
        return True
    except ProcessLookupError:
        return False
    except PermissionError:
        return False


def _group_alive(pgid):
    try:
        os.killpg(pgid, 0)
        return True
    except (ProcessLookupError, PermissionError):
        return False


def _children(table):
    return set(descendants(table, os.getpid())) if table is not None else set()


def _reap(pid):
    try:
        os.waitpid(pid, os.WNOHANG)
    except ChildProcessError:
        pass  # not our child (its parent still runs), or already reaped


def _kill_stragglers(pgid, excluded, tracked, grace_s):
    """SIGKILL whatever the probe left: every descendant of this process that was not here before the probe started
    (``excluded``), and, when orphans are not ``tracked`` (no subreaper), what /proc shows in its process group.
    Returns [(pid, command name)] of the processes killed."""
    killed = {}
    deadline = time.monotonic() + grace_s
    while True:
        table = process_table()
        if table is None:
            return []
        mine = set(descendants(table, os.getpid(), excluded))
        if not tracked:
            mine |= set(pid for pid, info in table.items() if info.pgid == pgid)
        living = [pid for pid in mine if not table[pid].zombie]
        for pid in living:
            killed.setdefault(pid, table[pid].name)
            try:
                os.kill(pid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                pass
        for pid in mine:
            if table[pid].ppid == os.getpid():
                _reap(pid)
        if not living or time.monotonic() >= deadline:
            return sorted(killed.items())
        time.sleep(0.02)


def run_probe_process(argv, timeout_s, stdout_path, stderr_path, cwd=None, env=None, kill_grace_s=KILL_GRACE_S):
    """Run ``argv`` in a new session; on timeout SIGTERM then SIGKILL its whole process group.

    Whatever the probe left running after it exited is killed too and named in the outcome, so a probe never leaves
    processes behind on the host: its process group, and on Linux every descendant, also one that left the group
    (``setsid``), since this process is a child subreaper while the probe runs.
    """
    was_subreaper = child_subreaper()
    tracked = was_subreaper or set_child_subreaper(True)
    try:
        table = process_table()
        earlier_children = _children(table)
        tracked = bool(tracked) and table is not None
        return _run(argv, timeout_s, stdout_path, stderr_path, cwd, env, kill_grace_s, earlier_children, tracked)
    finally:
        if was_subreaper is False:
            set_child_subreaper(False)


def _run(argv, timeout_s, stdout_path, stderr_path, cwd, env, kill_grace_s, earlier_children, tracked):
    started = time.monotonic()
    with open(stdout_path, "wb") as stdout_file, open(stderr_path, "wb") as stderr_file:
        try:
            process = subprocess.Popen(
                argv, stdin=subprocess.DEVNULL, stdout=stdout_file, stderr=stderr_file,
                cwd=cwd, env=env, close_fds=True, shell=False, start_new_session=True,
            )
        except OSError as exc:
            return ProcessOutcome(argv, None, False, time.monotonic() - started, spawn_error=exc,
                                  descendants_tracked=tracked)

        pgid = process.pid
        timed_out = False
        try:
            process.wait(timeout=timeout_s)
        except subprocess.TimeoutExpired:
            timed_out = True
            _kill_group(pgid, signal.SIGTERM)
            try:
                process.wait(timeout=kill_grace_s)
            except subprocess.TimeoutExpired:
                _kill_group(pgid, signal.SIGKILL)
                process.wait()
        stragglers = _kill_stragglers(pgid, earlier_children, tracked, kill_grace_s)
        group_killed = False
        if _group_alive(pgid):  # without /proc: the process group is all that can be found
            group_killed = _kill_group(pgid, signal.SIGKILL)
            deadline = time.monotonic() + kill_grace_s
            while _group_alive(pgid) and time.monotonic() < deadline:
                time.sleep(0.05)
        return ProcessOutcome(argv, process.returncode, timed_out, time.monotonic() - started, stragglers=stragglers,
                              timeout_s=timeout_s, descendants_tracked=tracked, group_killed=group_killed)


class FileCapture(object):
    """What was read of a file: all of it, or its head and its tail when it was larger than the limit."""

    def __init__(self, head, tail, size):
        self.head = head
        self.tail = tail
        self.size = size

    @property
    def complete(self):
        return len(self.head) + len(self.tail) == self.size


def read_bounded(path, limit_bytes, kept_when_cut_bytes):
    """The file whole when it has at most ``limit_bytes``, else its first and last ``kept_when_cut_bytes / 2``, so
    that a probe writing hundreds of MB never has them loaded here; None when there is no such file."""
    try:
        with open(path, "rb") as handle:
            size = os.fstat(handle.fileno()).st_size
            if size <= limit_bytes:
                data = handle.read(limit_bytes + 1)
                return FileCapture(data, b"", len(data))
            half = kept_when_cut_bytes // 2
            head = handle.read(half)
            handle.seek(max(half, size - half))
            return FileCapture(head, handle.read(half), size)
    except FileNotFoundError:
        return None


def file_size(path):
    try:
        return os.path.getsize(path)
    except OSError:
        return 0


def read_tail(path, limit_bytes=4000):
    """The last ``limit_bytes`` of a file as text (a byte that is not UTF-8 as \\xNN)."""
    try:
        with open(path, "rb") as handle:
            handle.seek(0, os.SEEK_END)
            size = handle.tell()
            handle.seek(max(0, size - limit_bytes))
            return transportable(handle.read())
    except OSError:
        return ""
