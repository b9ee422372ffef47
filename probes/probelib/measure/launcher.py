"""Start worker processes (the ranks of one all-reduce, the workers of a together phase), enforce a deadline, and kill them when it passes.

Each worker is an argv list (no shell) in its own session, so its process group is its pid and a
kill reaches whatever it started. The first failing worker gives the others ``failure_grace_s`` to write
their own result, then they are killed too (a rank whose peer died would otherwise wait for its timeout);
workers that do not depend on each other pass None and run on. While workers run, SIGTERM or SIGINT to the
probe kills them before the probe goes; the workers also ask the kernel to kill them when the probe dies
(parent_death.py).
"""
from __future__ import annotations

import json
import os
import signal
import subprocess
import threading
import time
from dataclasses import dataclass, field
from typing import Any, Callable, Dict, List, Optional

TERM_GRACE_S = 3.0
POLL_S = 0.05
STDERR_TAIL_LINES = 12
STDERR_TAIL_CHARS = 1500


@dataclass
class WorkerSpec:
    """One rank: its command, environment and the files it writes."""

    rank: int
    argv: List[str]
    env: Dict[str, str]
    stdout_path: str
    stderr_path: str
    result_path: str


@dataclass
class LaunchOutcome:
    returncodes: List[Optional[int]]
    timed_out: bool
    duration_s: float
    killed_ranks: List[int] = field(default_factory=list)
    first_failed_rank: Optional[int] = None


def run_workers(specs: List[WorkerSpec], deadline_s: float, failure_grace_s: Optional[float] = 10.0,
                clock: Callable[[], float] = time.monotonic,
                on_poll: Optional[Callable[[List[Optional[int]]], None]] = None) -> LaunchOutcome:
    """Run every worker to completion, or kill them all at ``deadline_s`` seconds; never leaves one running.
    ``on_poll`` is called with the workers' exit codes (None while running) every poll."""
    started = clock()
    processes: List[subprocess.Popen] = []
    previous = _install_handlers(processes)
    try:
        for spec in specs:
            with open(spec.stdout_path, "wb") as stdout_file, open(spec.stderr_path, "wb") as stderr_file:
                processes.append(subprocess.Popen(
                    spec.argv, env=spec.env, stdin=subprocess.DEVNULL, stdout=stdout_file, stderr=stderr_file,
                    close_fds=True, shell=False, start_new_session=True))
        return _wait(specs, processes, started, deadline_s, failure_grace_s, clock, on_poll)
    finally:
        kill_all(processes)
        _restore_handlers(previous)


def _wait(specs: List[WorkerSpec], processes: List[subprocess.Popen], started: float, deadline_s: float,
          failure_grace_s: Optional[float], clock: Callable[[], float],
          on_poll: Optional[Callable[[List[Optional[int]]], None]]) -> LaunchOutcome:
    first_failure: Optional[int] = None
    failed_at = 0.0
    timed_out = False
    killed: List[int] = []
    while True:
        codes = [process.poll() for process in processes]
        if on_poll is not None:
            on_poll(codes)
        if all(code is not None for code in codes):
            break
        now = clock()
        if first_failure is None:
            for spec, code in zip(specs, codes):
                if code is not None and code != 0:
                    first_failure, failed_at = spec.rank, now
                    break
        if now - started > deadline_s:
            timed_out = True
        grace_over = failure_grace_s is not None and first_failure is not None and now - failed_at > failure_grace_s
        if timed_out or grace_over:
            killed = [spec.rank for spec, code in zip(specs, codes) if code is None]
            kill_all(processes)
            break
        time.sleep(POLL_S)
    codes = [process.wait() for process in processes]
    if first_failure is None:
        first_failure = next((spec.rank for spec, code in zip(specs, codes) if code != 0), None)
    return LaunchOutcome(codes, timed_out, clock() - started, killed, first_failure)


def kill_all(processes: List[subprocess.Popen]) -> None:
    """SIGTERM every worker's process group, SIGKILL what is left after a grace, reap the workers."""
    for process in processes:
        if process.poll() is None:
            _signal_group(process.pid, signal.SIGTERM)
    deadline = time.monotonic() + TERM_GRACE_S
    while any(process.poll() is None for process in processes) and time.monotonic() < deadline:
        time.sleep(POLL_S)
    for process in processes:
        # the group outlives its leader when the worker started children: kill it either way
        _signal_group(process.pid, signal.SIGKILL)
        try:
            process.wait(timeout=TERM_GRACE_S)
        except subprocess.TimeoutExpired:
            pass


def _signal_group(pgid: int, sig: int) -> None:
    try:
        os.killpg(pgid, sig)
    except (ProcessLookupError, PermissionError):
        pass


def _install_handlers(processes: List[subprocess.Popen]) -> Dict[int, Any]:
    if threading.current_thread() is not threading.main_thread():
        return {}

    def on_signal(number: int, unused_frame: Any) -> None:
        for process in processes:
            _signal_group(process.pid, signal.SIGKILL)
        signal.signal(number, previous.get(number, signal.SIG_DFL))
        os.kill(os.getpid(), number)

    previous = {}
    for number in (signal.SIGTERM, signal.SIGINT):
        previous[number] = signal.signal(number, on_signal)
    return previous


def _restore_handlers(previous: Dict[int, Any]) -> None:
    for number, handler in previous.items():
        signal.signal(number, handler)


def read_result(path: str) -> Optional[Dict[str, Any]]:
    """The worker's JSON result, or None when it wrote none (or half of one)."""
    try:
        with open(path, encoding="utf-8") as handle:
            value = json.load(handle)
    except (OSError, ValueError):
        return None
    return value if isinstance(value, dict) else None


def read_text(path: str) -> str:
    try:
        with open(path, "rb") as handle:
            return handle.read().decode("utf-8", "replace")
    except OSError:
        return ""


def stderr_tail(text: str, lines: int = STDERR_TAIL_LINES, chars: int = STDERR_TAIL_CHARS) -> str:
    """The last meaningful lines of a worker's output: C++ stack frames and NCCL INFO chatter left out."""
    kept = []
    for line in text.splitlines():
        stripped = line.strip()
        if not stripped or stripped.startswith("frame #") or stripped == "<omitting python frames>" or " NCCL INFO " in line:
            continue
        kept.append(stripped)
    tail = " | ".join(kept[-lines:])
    return tail[-chars:]


def describe_exit(code: Optional[int]) -> str:
    if code is None:
        return "is still running"
    if code < 0:
        try:
            name = signal.Signals(-code).name
        except ValueError:
            name = "signal %d" % -code
        return "was killed by %s" % name
    return "exited with code %d" % code
