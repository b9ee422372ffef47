"""Time one product (the calibration shape) in both named states, burst and sustained, with NVML sampled inside every
timed window (torch is passed in; NVML through the load probe's reads). Read only: no clock or power setting."""
from __future__ import annotations

import os
import time
from typing import Any, Callable, Dict, List, Optional

from probe_packages.gemm import power_methods, roofline
from probe_packages.gemm.cases import GemmCase
from probe_packages.gemm.records import significant
from probelib.fields import unavailable
from probelib.measure.foreign_processes import descends_from, own_pids
from probelib.measure.sampler import Sampler
from probelib.measure.timing import time_per_iteration_s
from probelib.nvml.gpu_processes import read_processes
from probelib.nvml.gpu_reads import POWER_LIMIT_FUNCTIONS, GpuReads, milliwatts_to_w

IDLE_POLL_S = 0.1


def window_seconds(seconds: float) -> float:
    """A window's length to 0.1 ms, or to two significant digits when shorter: a window of a few microseconds (a fast
    product on a loaded CPU) is never recorded as 0 s, which no window lasts."""
    return round(seconds, 4) if seconds >= 0.0001 else significant(seconds, 2)


class PowerStateRun:
    """Burst and sustained for one device and dtype. ``reads`` is the GPU's NVML reads (None: NVML is not usable, and
    the windows are timed without state evidence)."""

    def __init__(self, torch: Any, device: Dict[str, Any], case: GemmCase, reads: Optional[GpuReads],
                 settings: Dict[str, Any], clock: Callable[[], float] = time.monotonic, proc_root: str = "/proc") -> None:
        self.torch, self.device, self.case, self.reads = torch, device, case, reads
        self.settings = settings
        self.clock = clock
        self.origin = clock()
        self.proc_root = proc_root
        # another job's processes on this GPU, once a wait for idle found them: it never comes idle for this run
        self.busy_with: List[Dict[str, Any]] = []

    # -- NVML --------------------------------------------------------------------------------------------------
    def power_limit_w(self) -> Any:
        if self.reads is None:
            return unavailable("NVML is not usable")
        limit, unused_function = self.reads.reader.first_value(POWER_LIMIT_FUNCTIONS, self.reads.handle, convert=milliwatts_to_w)
        return limit

    def sampler(self) -> Optional[Sampler]:
        if self.reads is None:
            return None
        return Sampler({"gpu": self.reads}, self.settings["sampling_interval_s"], 0, self.origin, [os.getpid()],
                       clock=self.clock).start()

    def wait_for_idle(self, hold_s: float) -> Dict[str, Any]:
        """Wait until NVML has shown the GPU idle for ``hold_s`` without a break (bounded); say how long it took.

        A hold, not one idle reading: on the H200 rig NVML's power read idle right after a 50 ms burst, yet a burst
        started at once hit the software power cap within 3-11 ms (the cap's own history had not cooled)."""
        if self.reads is None:
            return {"waited_s": 0.0, "reached_idle": unavailable("NVML is not usable: the wait cannot see the GPU")}
        if self.busy_with:
            return {"waited_s": 0.0, "reached_idle": False, "not_waited": self._busy_words()}
        limit = self.power_limit_w()
        began = self.clock()
        idle_since: Optional[float] = None
        last: List[Any] = []
        while True:
            values, unused_failures = self.reads.sample()
            last = [0.0] + list(values)
            now = self.clock()
            if power_methods.is_idle(last, limit if isinstance(limit, (int, float)) else None, self.settings["idle_power_fraction"]):
                idle_since = now if idle_since is None else idle_since
            else:
                idle_since = None
            if idle_since is not None and now - idle_since >= hold_s:
                reached = True
                break
            if self.clock() - began >= self.settings["idle_wait_max_s"]:
                reached = False
                self.busy_with = self.foreign_processes()
                break
            time.sleep(IDLE_POLL_S)
        return {"waited_s": round(self.clock() - began, 2), "reached_idle": reached,
                "sm_clock_mhz_at_start": last[power_methods.SM_CLOCK], "power_w_at_start": last[power_methods.POWER]}

    def foreign_processes(self) -> List[Dict[str, Any]]:
        """The compute processes on this GPU that are not this probe's (nor its children's), as NVML lists them now."""
        try:
            listed = read_processes(self.reads.reader, self.reads.handle, "Compute", self.proc_root)
            if not isinstance(listed, list):
                return []
            own = own_pids(self.proc_root)
            return [process for process in listed if not descends_from(process["pid"], own, self.proc_root)]
        except Exception:  # pylint: disable=broad-exception-caught  # the listing must never stop the measurement
            return []

    def _busy_words(self) -> str:
        named = ", ".join("%s (pid %d)" % (process["name"] if isinstance(process["name"], str) else "?", process["pid"])
                          for process in self.busy_with)
        return ("another job computes on this GPU (%s): an earlier wait of this run found it there when the GPU did not "
                "come idle, so this window did not wait again; its figure is not a burst from idle" % named)

    # -- timing --------------------------------------------------------------------------------------------------
    def timed(self, operation: Callable[[], Any], calls: int) -> float:
        """Seconds per call of ``calls`` back-to-back calls between CUDA events."""
        return time_per_iteration_s(self.torch, self.device, operation, 0, calls)

    def window(self, operation: Callable[[], Any], calls: int) -> Dict[str, Any]:
        began = self.clock()
        seconds = self.timed(operation, calls)
        ended = self.clock()
        return {"calls": calls, "tflops": roofline.tflops_of(self.case.m, self.case.n, self.case.k, seconds),
                "began_s": began, "ended_s": ended}

    def _state(self, sampler: Optional[Sampler], window: Dict[str, Any]) -> Any:
        if sampler is None:
            return unavailable("NVML is not usable: no sample of the GPU's state")
        rows = sampler.rows["gpu"]
        return power_methods.window_state(rows, window["began_s"] - self.origin, window["ended_s"] - self.origin,
                                          self.settings["sampling_interval_s"])

    def _record(self, window: Dict[str, Any], state: Any, extra: Dict[str, Any]) -> Dict[str, Any]:
        record = {"calls": window["calls"], "tflops": significant(window["tflops"]),
                  "duration_s": window_seconds(window["ended_s"] - window["began_s"]), "state": state}
        record.update(extra)
        return record

    # -- the two methods -----------------------------------------------------------------------------------------
    def burst(self, operation: Callable[[], Any], repeats: int) -> Dict[str, Any]:
        settings = self.settings
        windows = []
        discarded: List[Dict[str, Any]] = []
        self.timed(operation, 1)  # the first call picks cuBLAS's kernel; keep that out of the first window
        for unused_repeat in range(repeats):
            for attempt in range(1 + settings["burst_retries"]):
                # a window the cap reached anyway is taken again once, after a cool-down three times as long
                record = self._burst_window(operation, settings["burst_idle_hold_s"] * (3 if attempt else 1))
                state = record["state"]
                capped = isinstance(state, dict) and state.get("power_cap_reached")
                if not capped or attempt == settings["burst_retries"] or self.busy_with:
                    break
                discarded.append(record)
            windows.append(record)
        result = power_methods.summary("burst", [window["tflops"] for window in windows], windows)
        result["discarded_windows"] = discarded
        result["window_target_s"] = settings["burst_window_s"]
        result["note"] = power_methods.burst_note(result)
        return result

    def _burst_window(self, operation: Callable[[], Any], hold_s: float) -> Dict[str, Any]:
        settings = self.settings
        idle = self.wait_for_idle(hold_s)
        sampler = self.sampler()
        try:
            single = self.timed(operation, settings["burst_warmup_calls"])
            calls = max(1, int(settings["burst_window_s"] // max(single, 1e-9)))
            window = self.window(operation, calls)
        finally:
            if sampler is not None:
                sampler.stop()
        return self._record(window, self._state(sampler, window), {"idle_before": idle, "warmup_calls": settings["burst_warmup_calls"]})

    def sustained(self, operation: Callable[[], Any], repeats: int) -> Dict[str, Any]:
        settings = self.settings
        limit = self.power_limit_w()
        sampler = self.sampler()
        windows = []
        try:
            single = self.timed(operation, 3)
            chunk = max(1, int(0.25 // max(single, 1e-9)))
            settle_began = self.clock()
            while self.clock() - settle_began < settings["sustained_settle_s"]:
                self.timed(operation, chunk)
            settle = {"began_s": settle_began, "ended_s": self.clock(), "calls": 0, "tflops": 0.0}
            calls = max(1, int(settings["sustained_window_s"] // max(single, 1e-9)))
            for unused_repeat in range(repeats):
                windows.append(self.window(operation, calls))
        finally:
            if sampler is not None:
                sampler.stop()
        settle_state = self._state(sampler, settle)
        records = [self._record(window, self._state(sampler, window), {}) for window in windows]
        result = power_methods.summary("sustained", [window["tflops"] for window in records], records)
        settled = "samples" in settle_state and bool(settle_state["power_cap_reached"])
        result.update({"settle_s": settings["sustained_settle_s"], "settle_state": settle_state,
                       "reached_power_cap_while_settling": settled if "samples" in settle_state else settle_state,
                       "power_limit_w": limit})
        result["note"] = power_methods.sustained_note(result, settled, limit)
        return result
