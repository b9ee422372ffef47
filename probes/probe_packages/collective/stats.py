"""algbw, busbw and the summary of one all-reduce curve (nccl-tests conventions; GB = 1e9 bytes). Pure Python."""
from __future__ import annotations

from typing import Any, Dict, List, Sequence

from probe_packages.collective.knee import knee_of_curve
from probelib.fields import unavailable
from probelib.sweep import find_plateau, significant

PLATEAU_TOLERANCE_PCT = 5.0
PLATEAU_MIN_POINTS = 3
# Only sizes at or above largest / LARGE_SIZE_DIVISOR may form the plateau (the large-message end of the curve).
LARGE_SIZE_DIVISOR = 64


def bus_factor(ranks: int) -> float:
    """2(n-1)/n: the share of the data each rank sends and receives in a ring all-reduce (nccl-tests' busbw factor)."""
    if ranks < 1:
        raise ValueError("an all-reduce needs at least one rank, not %r" % ranks)
    return 2.0 * (ranks - 1) / ranks


def algbw_gbps(size_bytes: float, time_s: float) -> float:
    """Message bytes / time / 1e9."""
    if not time_s > 0:
        raise ValueError("the time per all-reduce must be > 0, not %r" % time_s)
    return size_bytes / time_s / 1e9


def busbw_gbps(algbw: float, ranks: int) -> float:
    return algbw * bus_factor(ranks)


def sweep_points(raw_points: Sequence[Dict[str, Any]], ranks: int) -> List[Dict[str, Any]]:
    """The worker's points ({size_bytes, time_s, iterations, verified}) as the curve's sweep, rounded to 6 digits."""
    points = []
    for raw in raw_points:
        algbw = algbw_gbps(raw["size_bytes"], raw["time_s"])
        points.append({
            "size_bytes": int(raw["size_bytes"]),
            "time_us": significant(raw["time_s"] * 1e6),
            "algbw_gbps": significant(algbw),
            "busbw_gbps": significant(busbw_gbps(algbw, ranks)),
            "iterations": int(raw["iterations"]),
            "verified": bool(raw["verified"]),
        })
    return points


def plateau_min_size(sizes: Sequence[int]) -> float:
    return max(sizes) / float(LARGE_SIZE_DIVISOR)


def summarize_curve(raw_points: Sequence[Dict[str, Any]], ranks: int) -> Dict[str, Any]:
    """sweep, plateau (of busbw), peak_busbw_gbps, busbw_at_largest_gbps, largest_bytes and the knee of one curve."""
    sweep = sweep_points(raw_points, ranks)
    if not sweep:
        return {"sweep": []}
    sizes = [point["size_bytes"] for point in sweep]
    busbw = [busbw_gbps(algbw_gbps(raw["size_bytes"], raw["time_s"]), ranks) for raw in raw_points]
    plateau = _plateau(sizes, busbw, ranks)
    largest = max(range(len(sizes)), key=lambda index: sizes[index])
    try:
        knee = knee_of_curve(sizes, [raw["time_s"] for raw in raw_points],
                             [algbw_gbps(raw["size_bytes"], raw["time_s"]) for raw in raw_points],
                             tolerance_pct=PLATEAU_TOLERANCE_PCT, min_points=PLATEAU_MIN_POINTS,
                             min_size=plateau_min_size(sizes))
    except ValueError as exc:
        knee = unavailable(str(exc))
    return {
        "sweep": sweep,
        "plateau": plateau,
        "peak_busbw_gbps": significant(max(busbw)),
        "busbw_at_largest_gbps": significant(busbw[largest]),
        "largest_bytes": sizes[largest],
        "knee": knee,
    }


def _plateau(sizes: List[int], busbw: List[float], ranks: int) -> Dict[str, Any]:
    if ranks < 2:
        return {"found": False, "sizes_bytes": [], "busbw_gbps": None,
                "reason": "one rank moves no data between ranks: busbw is 0"}
    try:
        found = find_plateau(sizes, busbw, tolerance_pct=PLATEAU_TOLERANCE_PCT, min_points=PLATEAU_MIN_POINTS,
                             min_size=plateau_min_size(sizes))
    except ValueError as exc:
        return {"found": False, "sizes_bytes": [], "busbw_gbps": None, "reason": str(exc)}
    return {"found": bool(found["found"]), "sizes_bytes": [int(size) for size in found["sizes"]],
            "busbw_gbps": significant(found["value"]) if found["found"] else None, "reason": found["reason"]}


def headline(curve: Dict[str, Any]) -> Dict[str, Any]:
    """The busbw that stands for a curve: its plateau, else its largest size ({gbps, source, size_bytes})."""
    plateau = curve.get("plateau") or {}
    if plateau.get("found"):
        return {"gbps": plateau["busbw_gbps"], "source": "plateau", "sizes_bytes": plateau["sizes_bytes"]}
    return {"gbps": curve.get("busbw_at_largest_gbps"), "source": "largest_size", "sizes_bytes": [curve.get("largest_bytes")]}
