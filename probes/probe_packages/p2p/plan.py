"""The p2p plan: the size list, and the sizes lowered to fit the GPUs' free memory."""
from __future__ import annotations

from typing import Any, Dict, Sequence

from probelib.fields import unavailable

MIB = 1 << 20
QUICK_SIZES_MIB = [64, 256]
QUICK_REPEATS = 1
MEMORY_FRACTION = 0.4
PLATEAU_TOLERANCE_PCT = 3.0
PLATEAU_MIN_POINTS = 2


def buffers_per_gpu(bidirectional: bool) -> int:
    """Large buffers one GPU holds at once: its source and (bidirectional) the destination of the reverse copy."""
    return 2 if bidirectional else 1


def fit_sizes(requested_mib: Sequence[int], free_bytes: Sequence[int], buffers: int,
              fraction: float = MEMORY_FRACTION) -> Dict[str, Any]:
    """The requested sizes (ascending, deduplicated) that fit: ``buffers`` x size <= ``fraction`` of the least free memory.

    When none fits, the one size used is the largest whole MiB that does. Returns {sizes_bytes, limited_by
    (request | device_memory), dropped_mib, budget_bytes, note}. Raises ValueError when not even 1 MiB fits.
    """
    if not free_bytes:
        raise ValueError("no GPU's free memory is known")
    least_free = min(free_bytes)
    budget = int(least_free * fraction)
    largest_mib = budget // max(buffers, 1) // MIB
    wanted = sorted(set(int(size) for size in requested_mib))
    kept = [size for size in wanted if size <= largest_mib]
    dropped = [size for size in wanted if size > largest_mib]
    if not kept:
        if largest_mib < 1:
            raise ValueError("not even 1 MiB fits: %d buffer(s) per GPU in %g %% of %d bytes free"
                             % (buffers, fraction * 100, least_free))
        kept = [largest_mib]
    note = "every requested size fits"
    if dropped:
        note = ("%s MiB left out: %d buffer(s) of that size per GPU exceed %g %% of the least free GPU memory (%d MiB)"
                % (", ".join(str(size) for size in dropped), buffers, fraction * 100, least_free // MIB))
        if kept == [largest_mib] and largest_mib not in wanted:
            note += "; the largest whole MiB that fits (%d) is used instead" % largest_mib
    return {"sizes_bytes": [size * MIB for size in kept], "limited_by": "device_memory" if dropped else "request",
            "dropped_mib": dropped, "budget_bytes": budget, "note": note}


def make_plan(params: Dict[str, Any], spin_kernel: Any, free_bytes: Sequence[int] = None) -> Dict[str, Any]:
    """The plan as it runs. ``free_bytes`` (one value per GPU) lowers the sizes; None records them unfitted."""
    quick = bool(params["quick"])
    requested = list(QUICK_SIZES_MIB) if quick else sorted(set(params["sizes_mib"]))
    bidirectional = bool(params["bidirectional"])
    buffers = buffers_per_gpu(bidirectional)
    if free_bytes is None:
        fitted: Dict[str, Any] = {"sizes_bytes": [size * MIB for size in requested], "limited_by": "request",
                                  "note": "not fitted to GPU memory: nothing was measured"}
        least_free: Any = unavailable("not read: nothing was measured")
    else:
        fitted = fit_sizes(requested, free_bytes, buffers)
        least_free = int(min(free_bytes))
    return {
        "quick": quick,
        "sizes_mib_requested": requested,
        "sizes_bytes": fitted["sizes_bytes"],
        "sizes_limited_by": fitted["limited_by"],
        "sizes_note": fitted["note"],
        "memory_fraction": MEMORY_FRACTION,
        "buffers_per_gpu": buffers,
        "least_free_memory_bytes": least_free,
        "latency_size_bytes": int(params["latency_size_bytes"]),
        "latency_copies": int(params["latency_copies"]),
        "iterations": int(params["iterations"]),
        "repeats": QUICK_REPEATS if quick else int(params["repeats"]),
        "warmup": int(params["warmup"]),
        "bidirectional": bidirectional,
        "spin_kernel": spin_kernel,
        "plateau_tolerance_pct": PLATEAU_TOLERANCE_PCT,
        "plateau_min_points": PLATEAU_MIN_POINTS,
    }
