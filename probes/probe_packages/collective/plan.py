"""The plan of an all-reduce sweep: message sizes, the adaptive iteration rule, the data check's pattern, memory fit."""
from __future__ import annotations

import math
from typing import Any, Dict, List

from probelib.params import require

FLOAT32_BYTES = 4
MIN_BYTES = 8
MIB = 1 << 20
GIB = 1 << 30
CALIBRATION_CALLS = 2
PATTERN_PERIOD = 7
# Exact float32 sums need every partial sum below 2**24: PATTERN_PERIOD * n(n+1)/2 < 2**24.
MAX_WORLD_SIZE = 1024
# Buffers a rank holds at the largest size: the reduced buffer, the pattern, the expected values, and one spare;
# they must fit in this share of the GPU's free memory.
BUFFERS_AT_LARGEST = 4
FREE_MEMORY_SHARE = 0.5


def message_sizes(max_bytes: int, min_bytes: int = MIN_BYTES) -> List[int]:
    """min_bytes, 2 x min_bytes, ... up to max_bytes; max_bytes itself is the last size when it is not a x2 step."""
    if min_bytes < FLOAT32_BYTES or min_bytes % FLOAT32_BYTES:
        raise ValueError("min_bytes must be a multiple of %d, not %r" % (FLOAT32_BYTES, min_bytes))
    if max_bytes < min_bytes or max_bytes % FLOAT32_BYTES:
        raise ValueError("the largest message must be a multiple of %d bytes and at least %d, not %r"
                         % (FLOAT32_BYTES, min_bytes, max_bytes))
    sizes = []
    size = min_bytes
    while size <= max_bytes:
        sizes.append(size)
        size *= 2
    if sizes[-1] != max_bytes:
        sizes.append(max_bytes)
    return sizes


def iterations_for(time_per_op_s: float, target_s: float, lowest: int, highest: int) -> int:
    """ceil(target_s / time_per_op_s), clamped to [lowest, highest]; every rank gets the same time, so the same count."""
    if lowest < 1 or highest < lowest:
        raise ValueError("iteration bounds must satisfy 1 <= lowest <= highest, not %r, %r" % (lowest, highest))
    if not time_per_op_s > 0 or not math.isfinite(time_per_op_s):
        return highest
    return int(min(highest, max(lowest, math.ceil(target_s / time_per_op_s))))


def iterations_rule(target_s: float, lowest: int, highest: int) -> str:
    return ("iterations = ceil(%g s / t) clamped to [%d, %d], where t is the slowest rank's time per all-reduce of %d "
            "calibration calls made after the warm-up; every rank uses the same count"
            % (target_s, lowest, highest, CALIBRATION_CALLS))


def expected_sum_factor(world_size: int) -> int:
    """Rank r contributes (r + 1) x pattern, so every element of the sum is pattern x n(n+1)/2."""
    return world_size * (world_size + 1) // 2


def fit_max_bytes(sizes: List[int], free_bytes: int, buffers: int = BUFFERS_AT_LARGEST,
                  share: float = FREE_MEMORY_SHARE) -> int:
    """The largest of ``sizes`` whose ``buffers`` buffers fit in ``share`` of ``free_bytes``; 0 when none fits."""
    fitting = [size for size in sizes if size * buffers <= free_bytes * share]
    return max(fitting) if fitting else 0


def check_common(params: Dict[str, Any]) -> None:
    """What the spec (params.json) cannot say about the shared sweep parameters: a check across them."""
    require(params["max_iterations"] >= params["min_iterations"], "max_iterations (%r) must be >= min_iterations (%r)"
            % (params["max_iterations"], params["min_iterations"]))


def plan_record(backend: str, kind: str, world_size: int, sizes: List[int], params: Dict[str, Any],
                settings: Dict[str, str], note: str) -> Dict[str, Any]:
    """The result's plan of an all-reduce sweep (collective, and collective_hosts across hosts); note says how it runs."""
    return {
        "backend": backend, "kind": kind, "world_size": world_size, "sizes_bytes": sizes, "dtype": "float32", "op": "sum",
        "warmup": int(params["warmup"]),
        "iterations_rule": iterations_rule(float(params["target_time_per_size_s"]), int(params["min_iterations"]),
                                           int(params["max_iterations"])),
        "max_bytes": sizes[-1], "note": note, "worker_env_set": dict(settings),
        "rendezvous_timeout_s": float(params["rendezvous_timeout_s"]), "curve_timeout_s": float(params["curve_timeout_s"]),
    }


def worker_plan(backend: str, kind: str, world_size: int, sizes: List[int], params: Dict[str, Any]) -> Dict[str, Any]:
    """What every rank must agree on; the worker refuses to start when a peer's plan differs."""
    return {
        "backend": backend,
        "kind": kind,
        "world_size": world_size,
        "sizes_bytes": list(sizes),
        "warmup": int(params["warmup"]),
        "min_iterations": int(params["min_iterations"]),
        "max_iterations": int(params["max_iterations"]),
        "target_time_per_size_s": float(params["target_time_per_size_s"]),
    }
