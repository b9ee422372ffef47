"""Time an operation on a device: warm-up, then many iterations between CUDA events (or a clock on the CPU)."""
from __future__ import annotations

import math
import time
from typing import Any, Callable, Dict, List


def time_per_iteration_s(torch: Any, device: Dict[str, Any], operation: Callable[[], Any],
                         warmup: int, iterations: int) -> float:
    """Seconds per call of ``operation``, averaged over ``iterations`` calls after ``warmup`` calls.

    On a GPU the calls are queued back to back and timed by CUDA events on the current stream, so the
    host's launch overhead is hidden except for operations shorter than a launch; on the CPU by perf_counter.
    """
    if iterations < 1:
        raise ValueError("iterations must be at least 1")
    for unused_call in range(warmup):
        operation()
    if device["kind"] == "cuda":
        with torch.cuda.device(device["index"]):
            torch.cuda.synchronize()
            start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            start.record()
            for unused_call in range(iterations):
                operation()
            end.record()
            end.synchronize()
            return start.elapsed_time(end) / 1000.0 / iterations
    started = time.perf_counter()
    for unused_call in range(iterations):
        operation()
    return (time.perf_counter() - started) / iterations


def repeat_s(torch: Any, device: Dict[str, Any], operation: Callable[[], Any], warmup: int, iterations: int,
             repeats: int, between: Callable[[int], Any] = None) -> List[float]:
    """``repeats`` independent timings; ``between(repeat_index)`` runs before each (e.g. a snapshot)."""
    timings = []
    for repeat in range(repeats):
        if between is not None:
            between(repeat)
        timings.append(time_per_iteration_s(torch, device, operation, warmup if repeat == 0 else 1, iterations))
    return timings


def point_timing_plan(params: Dict[str, Any], quick: bool) -> Dict[str, Any]:
    """The timing entries of a size sweep's plan (membw, fusion), as the data records them: each point's target time
    (the quick one with quick), warm-up iterations, iteration bounds, repeats."""
    return {
        "target_point_ms": float(params["quick_target_point_ms"] if quick else params["target_point_ms"]),
        "warmup_iterations": params["warmup_iterations"],
        "min_iterations": params["min_iterations"],
        "max_iterations": params["max_iterations"],
        "repeats": params["repeats"],
    }


def iterations_for(target_s: float, per_iteration_s: float, min_iterations: int, max_iterations: int) -> int:
    """How many back-to-back copies make a point last about ``target_s``, clamped to [min, max]."""
    if per_iteration_s <= 0 or not math.isfinite(per_iteration_s):
        return max_iterations
    wanted = int(round(target_s / per_iteration_s))
    return max(min_iterations, min(max_iterations, wanted))
