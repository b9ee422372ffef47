"""Timing copies behind a spin, as nvbandwidth does: the stream is held by a spin kernel while the host queues the copies.

torch.cuda._sleep(cycles) queues a one-thread kernel that spins for ``cycles`` GPU clock cycles. Queued first on the
timed stream, it keeps the GPU from starting the copies until the host has queued all of them, so the time between the
start and end events is copy time only, not the host's enqueue cost. Whether the spin really outlasted the enqueue is
checked: an event recorded right after the spin is queried once every copy is queued; still pending means covered.
The spin's length comes from a calibration (cycles per second on each GPU) and the enqueue time seen so far.
"""
from __future__ import annotations

import math
import time
from typing import Any, Callable, Dict, List, Sequence

from probelib.fields import unavailable

SPIN_NAME = "torch.cuda._sleep"
CALIBRATION_CYCLES = 5000000
WAKE_CYCLES = 20000000
INITIAL_ENQUEUE_PER_COPY_S = 50e-6
SPIN_SAFETY = 4.0
MIN_SPIN_S = 5e-3
CALIBRATION_RUNS = 3
MAX_SPIN_S = 0.2


def spin_hold_s(copies: int, enqueue_per_copy_s: float, safety: float = SPIN_SAFETY,
                min_s: float = MIN_SPIN_S, max_s: float = MAX_SPIN_S) -> float:
    """How long to hold the stream: ``safety`` x the expected enqueue time of ``copies`` copies, within [min_s, max_s].

    The margin is wide on purpose: a spin is cheap next to the copies, and the GPU's clock may run faster than when
    the spin was calibrated."""
    return min(max_s, max(min_s, safety * copies * max(enqueue_per_copy_s, 0.0)))


def spin_cycles(hold_s: float, cycles_per_s: float) -> int:
    if not (cycles_per_s > 0 and math.isfinite(cycles_per_s)):
        raise ValueError("the spin's clock rate must be a positive number, not %r" % (cycles_per_s,))
    return max(1, int(math.ceil(hold_s * cycles_per_s)))


def cycles_per_s(cycles: int, elapsed_s: Sequence[float]) -> float:
    """The clock rate the spin ran at: the fastest of the calibration runs (a GPU that woke up mid-way runs faster)."""
    positive = [seconds for seconds in elapsed_s if seconds > 0]
    if not positive:
        raise ValueError("the spin calibration measured no positive time")
    return cycles / min(positive)


class EnqueueEstimate:
    """The longest host enqueue time per copy seen so far, which sizes the next spin."""

    def __init__(self, initial_per_copy_s: float = INITIAL_ENQUEUE_PER_COPY_S) -> None:
        self.per_copy_s = initial_per_copy_s

    def update(self, enqueue_s: float, copies: int, covered: bool) -> None:
        per_copy = enqueue_s / max(copies, 1)
        if not covered:  # the spin ran out: ask for more than was seen, so the next one lasts
            per_copy *= 2.0
        self.per_copy_s = max(self.per_copy_s, per_copy)


class Spin:
    """torch.cuda._sleep where this torch has it; ``available`` False means no hold (queueing is then timed too)."""

    def __init__(self, torch: Any) -> None:
        self.torch = torch
        self.available = callable(getattr(torch.cuda, "_sleep", None))
        self.rates: Dict[int, float] = {}

    def describe(self) -> Any:
        if self.available:
            return SPIN_NAME
        return unavailable("this torch %s has no %s: nothing holds the stream, so the host's queueing of the copies is "
                           "included in the timing" % (getattr(self.torch, "__version__", "?"), SPIN_NAME))

    def rate(self, device_index: int, stream: Any) -> float:
        """Cycles per second of the spin on one GPU, calibrated with CUDA events after a spin that wakes the GPU's
        clocks up (an idle GPU runs slower, and a spin sized at idle clocks would end too soon once they rise)."""
        if device_index not in self.rates:
            torch = self.torch
            with torch.cuda.stream(stream):
                torch.cuda._sleep(WAKE_CYCLES)  # pylint: disable=protected-access
                elapsed = []
                for unused_run in range(CALIBRATION_RUNS):
                    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
                    start.record(stream)
                    torch.cuda._sleep(CALIBRATION_CYCLES)  # pylint: disable=protected-access
                    end.record(stream)
                    end.synchronize()
                    elapsed.append(start.elapsed_time(end) / 1000.0)
            self.rates[device_index] = cycles_per_s(CALIBRATION_CYCLES, elapsed)
        return self.rates[device_index]

    def forget(self, device_index: int) -> None:
        """Calibrate this GPU again at the next hold (its clocks may have changed since)."""
        self.rates.pop(device_index, None)

    def hold(self, device_index: int, stream: Any, seconds: float) -> Any:
        """Queue the spin on ``stream``; returns an event that completes when it ends (None without a spin)."""
        if not self.available:
            return None
        torch = self.torch
        cycles = spin_cycles(seconds, self.rate(device_index, stream))
        with torch.cuda.stream(stream):
            torch.cuda._sleep(cycles)  # pylint: disable=protected-access
        done = torch.cuda.Event()
        done.record(stream)
        return done


class Lane:
    """One direction of copies: ``copy()`` queues one copy on ``stream`` (of GPU ``device_index``, the source)."""

    def __init__(self, device_index: int, stream: Any, copy: Callable[[], Any]) -> None:
        self.device_index = device_index
        self.stream = stream
        self.copy = copy


def time_lanes(torch: Any, spin: Spin, lanes: List[Lane], copies: int, estimate: EnqueueEstimate) -> Dict[str, Any]:
    """``copies`` back-to-back copies on every lane at once, all held behind one spin on the first lane's stream.

    The first lane's start event follows the spin; every other lane's stream waits for that event and then records its
    own start, so all lanes start together. Each lane's end event is on its own stream and its time comes from its own
    GPU's events. Returns {elapsed_s: [per lane], enqueue_s, covered}.
    """
    if copies < 1 or not lanes:
        raise ValueError("need at least one copy and one lane")
    first = lanes[0]
    total = copies * len(lanes)
    spin_done = spin.hold(first.device_index, first.stream, spin_hold_s(total, estimate.per_copy_s))
    starts = [torch.cuda.Event(enable_timing=True) for unused_lane in lanes]
    ends = [torch.cuda.Event(enable_timing=True) for unused_lane in lanes]
    starts[0].record(first.stream)
    for lane, start in zip(lanes[1:], starts[1:]):
        lane.stream.wait_event(starts[0])
        start.record(lane.stream)
    began = time.perf_counter()
    for unused_copy in range(copies):
        for lane in lanes:
            lane.copy()
    for lane, end in zip(lanes, ends):
        end.record(lane.stream)
    enqueue_s = time.perf_counter() - began
    covered = spin_done is not None and not spin_done.query()
    for end in ends:
        end.synchronize()
    estimate.update(enqueue_s, total, covered or spin_done is None)
    return {"elapsed_s": [start.elapsed_time(end) / 1000.0 for start, end in zip(starts, ends)],
            "enqueue_s": enqueue_s, "covered": covered}
