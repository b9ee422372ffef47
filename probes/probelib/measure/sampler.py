"""The sampler thread: every ``interval_s`` it reads each GPU once (one row per GPU), and every ``process_interval_s``
(0: never) the processes on each GPU; it keeps its own timing (actual intervals, lateness, read time, missed ticks)."""
from __future__ import annotations

import math
import threading
import time
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple

from probelib.measure.sampler_timing import jitter

MAX_ERRORS = 10


def next_tick(tick: int, ended_s: float, interval_s: float) -> Tuple[int, int]:
    """(the next tick to take, ticks skipped): the first tick scheduled after ``ended_s`` (seconds from the origin), when
    the round of ``tick`` ran past later ticks' times."""
    following = int(math.floor(ended_s / interval_s)) + 1
    return max(tick + 1, following), max(0, following - tick - 1)


class Sampler:
    """Ticks at origin + k * interval_s. A round that overruns its slot skips the ticks it covered (missed_ticks) instead
    of firing them late back to back, so the rows keep a steady spacing."""

    def __init__(self, gpus: Dict[str, Any], interval_s: float, process_interval_s: float, origin: float,
                 own_pids: Sequence[int], clock: Callable[[], float] = time.monotonic) -> None:
        self.gpus = gpus
        self.interval_s = float(interval_s)
        self.process_interval_s = float(process_interval_s)
        self.origin = origin
        self.own_pids = list(own_pids)
        self.clock = clock
        self.rows: Dict[str, List[List[Any]]] = {key: [] for key in gpus}
        self.failures: Dict[str, Dict[str, Dict[str, Any]]] = {key: {} for key in gpus}
        self.process_observations: List[Tuple[float, str, Any]] = []
        self.times: List[float] = []
        self.lateness: List[float] = []
        self.durations: List[float] = []
        self.missed_ticks = 0
        self.errors: List[str] = []
        self._stop = threading.Event()
        self._thread: Optional[threading.Thread] = None
        self._last_processes: Optional[float] = None

    def start(self) -> "Sampler":
        self._thread = threading.Thread(target=self._run, name="load-sampler", daemon=True)
        self._thread.start()
        return self

    def stop(self, timeout_s: float = 30.0) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout_s)
            if self._thread.is_alive():
                self.errors.append("the sampler thread did not stop within %g s" % timeout_s)

    def _run(self) -> None:
        tick = 0
        while not self._stop.is_set():
            scheduled = self.origin + tick * self.interval_s
            wait = scheduled - self.clock()
            if wait > 0 and self._stop.wait(wait):
                break
            began = self.clock()
            try:
                self.take_round(began)
            except Exception as exc:  # one bad round must not end the sampling
                if len(self.errors) < MAX_ERRORS:
                    self.errors.append("sampling round at %.3f s failed: %s: %s" % (began - self.origin, type(exc).__name__, exc))
            ended = self.clock()
            self.lateness.append(began - scheduled)
            self.durations.append(ended - began)
            self.times.append(began - self.origin)
            tick, missed = next_tick(tick, ended - self.origin, self.interval_s)
            self.missed_ticks += missed

    def take_round(self, began: float) -> None:
        t_s = round(began - self.origin, 3)
        for key, reads in self.gpus.items():
            values, failures = reads.sample()
            self.rows[key].append([t_s] + list(values))
            for column, why in failures.items():
                counted = self.failures[key].setdefault(column, {"first_reason": why, "count": 0})
                counted["count"] += 1
        due = self.process_interval_s > 0 and (
            self._last_processes is None or began - self._last_processes >= self.process_interval_s - self.interval_s / 2)
        if due:
            self._last_processes = began
            for key, reads in self.gpus.items():
                self.process_observations.append((t_s, key, reads.processes(self.own_pids)))

    def timing(self) -> Dict[str, Any]:
        summary = jitter(self.times, self.lateness, self.durations, self.interval_s, self.missed_ticks)
        summary["process_interval_s"] = self.process_interval_s
        summary["process_rounds"] = len({entry[0] for entry in self.process_observations})
        return summary
