"""Timing one version of the chain: calibrate the iteration count, then repeats (CUDA events on a GPU)."""
from __future__ import annotations

from typing import Any, Callable, Dict, List

from probelib.measure.timing import iterations_for, repeat_s, time_per_iteration_s


def shortest_s(torch: Any, device: Dict[str, Any], operation: Callable[[], Any], warmup: int, count: int) -> float:
    """The shortest of three timings: one late call (a busy host, a first-call cost) must not set the count alone."""
    return min(time_per_iteration_s(torch, device, operation, warmup if attempt == 0 else 0, count) for attempt in range(3))


def calibrate(torch: Any, device: Dict[str, Any], operation: Callable[[], Any], plan: Dict[str, Any]) -> int:
    """Iterations that make one timing last about the plan's target: time a few calls, grow until measurable."""
    target_s = plan["target_point_ms"] / 1000.0
    count = 1
    per_call = shortest_s(torch, device, operation, plan["warmup_iterations"], count)
    while per_call * count < target_s / 10.0 and count < plan["max_iterations"]:
        count = min(plan["max_iterations"], max(count * 10, int(target_s / 10.0 / max(per_call, 1e-9))))
        per_call = shortest_s(torch, device, operation, 1, count)
    return iterations_for(target_s, per_call, plan["min_iterations"], plan["max_iterations"])


def timings_s(torch: Any, device: Dict[str, Any], operation: Callable[[], Any], plan: Dict[str, Any]) -> Dict[str, Any]:
    """{iterations, repeats_s: seconds per iteration of each repeat}."""
    iterations = calibrate(torch, device, operation, plan)
    repeats: List[float] = repeat_s(torch, device, operation, plan["warmup_iterations"], iterations, plan["repeats"])
    return {"iterations": iterations, "repeats_s": repeats}
