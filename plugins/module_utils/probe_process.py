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

KILL_GRACE_S = 5.0


class ProcessOutcome(object):
    """How the probe process ended."""

    def __init__(self, argv, returncode, timed_out, duration_s, spawn_error=None, stragglers_killed=False, timeout_s=None):
        self.argv = list(argv)
        self.timeout_s = timeout_s
        self.returncode = returncode
        self.timed_out = timed_out
        self.duration_s = duration_s
        self.spawn_error = spawn_error
        self.stragglers_killed = stragglers_killed

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


def run_probe_process(argv, timeout_s, stdout_path, stderr_path, cwd=None, env=None, kill_grace_s=KILL_GRACE_S):
    """Run ``argv`` in a new session; on timeout SIGTERM then SIGKILL its whole process group.

    Whatever the probe left running in its group after it exited is killed too, so a probe
    never leaves processes behind on the host.
    """
    started = time.monotonic()
    with open(stdout_path, "wb") as stdout_file, open(stderr_path, "wb") as stderr_file:
        try:
            process = subprocess.Popen(
                argv, stdin=subprocess.DEVNULL, stdout=stdout_file, stderr=stderr_file,
                cwd=cwd, env=env, close_fds=True, shell=False, start_new_session=True,
            )
        except OSError as exc:
            return ProcessOutcome(argv, None, False, time.monotonic() - started, spawn_error=exc)

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
        stragglers_killed = False
        if _group_alive(pgid):
            stragglers_killed = _kill_group(pgid, signal.SIGKILL)
            deadline = time.monotonic() + kill_grace_s
            while _group_alive(pgid) and time.monotonic() < deadline:
                time.sleep(0.05)
        return ProcessOutcome(argv, process.returncode, timed_out, time.monotonic() - started,
                              stragglers_killed=stragglers_killed, timeout_s=timeout_s)


def read_tail(path, limit_bytes=4000):
    """The last ``limit_bytes`` of a file as text (replacement characters for bad bytes)."""
    try:
        with open(path, "rb") as handle:
            handle.seek(0, os.SEEK_END)
            size = handle.tell()
            handle.seek(max(0, size - limit_bytes))
            return handle.read().decode("utf-8", "replace")
    except OSError:
        return ""
