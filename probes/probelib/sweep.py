"""Statistics of a size sweep, shared by the sweeping probes: median, coefficient of variation, the plateau.

Pure Python (no torch): a sweep is a list of sizes in ascending order and one value per size.
The plateau is the longest run of consecutive points whose values all lie within a tolerance of the
run's median, searched from the largest sizes downward; it is never simply the maximum.
"""
from __future__ import annotations

import math
from typing import Any, Dict, List, Optional, Sequence

BELOW_PLATEAU = "launch/cache dominated"
IN_PLATEAU = "plateau"
BEYOND_PLATEAU = "beyond plateau"
NO_PLATEAU = "no plateau"
# What a probe writes, as {"unavailable": ...}, where cv_pct gives None.
CV_NEEDS_TWO = "a coefficient of variation needs at least 2 repeats"


def significant(value: float, digits: int = 6) -> float:
    """``value`` rounded to ``digits`` significant digits (0.25240826 -> 0.252408, 4294.967296 -> 4294.97)."""
    if value == 0 or not math.isfinite(value):
        return value
    return round(value, digits - 1 - int(math.floor(math.log10(abs(value)))))


def median(values: Sequence[float]) -> float:
    if not values:
        raise ValueError("the median of no values")
    ordered = sorted(values)
    middle = len(ordered) // 2
    if len(ordered) % 2:
        return float(ordered[middle])
    return (ordered[middle - 1] + ordered[middle]) / 2.0


def cv_pct(values: Sequence[float]) -> Optional[float]:
    """Sample standard deviation (n - 1) over the mean, in percent; None for fewer than 2 values or a zero mean."""
    if len(values) < 2:
        return None
    mean = sum(values) / len(values)
    if mean == 0:
        return None
    variance = sum((value - mean) ** 2 for value in values) / (len(values) - 1)
    return math.sqrt(variance) / abs(mean) * 100.0


def deviation_pct(value: float, reference: float) -> float:
    return abs(value - reference) / abs(reference) * 100.0


def max_deviation_pct(values: Sequence[float]) -> float:
    """Largest distance of any value from the median of ``values``, in percent of that median."""
    centre = median(values)
    return max(deviation_pct(value, centre) for value in values)


def _check(sizes: Sequence[float], values: Sequence[float]) -> None:
    if len(sizes) != len(values):
        raise ValueError("sizes and values differ in length (%d, %d)" % (len(sizes), len(values)))
    for earlier, later in zip(sizes, sizes[1:]):
        if not later > earlier:
            raise ValueError("sizes must be strictly ascending: %r then %r" % (earlier, later))
    for value in values:
        if not (isinstance(value, (int, float)) and math.isfinite(value) and value > 0):
            raise ValueError("every value must be a positive finite number, not %r" % (value,))


def find_plateau(sizes: Sequence[float], values: Sequence[float], tolerance_pct: float = 3.0,
                 min_points: int = 2, min_size: float = 0.0) -> Dict[str, Any]:
    """The plateau of a sweep, or why there is none.

    Only points with size >= ``min_size`` may be in it (e.g. buffers a few times the cache). Among those,
    the longest run of consecutive points whose values are all within ``tolerance_pct`` of the run's median,
    with at least ``min_points`` points; between runs of equal length the one at the larger sizes wins.
    Returns {found, indices, sizes, value (the run's median), max_deviation_pct, includes_largest, reason}.
    """
    _check(sizes, values)
    if min_points < 1:
        raise ValueError("min_points must be at least 1")
    eligible = [index for index, size in enumerate(sizes) if size >= min_size]
    result: Dict[str, Any] = {"found": False, "indices": [], "sizes": [], "value": None, "max_deviation_pct": None,
                              "includes_largest": False, "reason": ""}
    if len(eligible) < min_points:
        result["reason"] = ("only %d measured size(s) at or above %g (the smallest size that is not cache dominated); "
                            "a plateau needs at least %d" % (len(eligible), min_size, min_points))
        return result
    first = eligible[0]
    last = len(sizes) - 1
    for length in range(last - first + 1, min_points - 1, -1):
        for end in range(last, first + length - 2, -1):
            start = end - length + 1
            window = list(values[start:end + 1])
            spread = max_deviation_pct(window)
            if spread <= tolerance_pct:
                indices = list(range(start, end + 1))
                result.update({
                    "found": True, "indices": indices, "sizes": [sizes[index] for index in indices],
                    "value": median(window), "max_deviation_pct": spread, "includes_largest": end == last,
                    "reason": "%d consecutive size(s) within %g %% of their median" % (length, tolerance_pct),
                })
                return result
    tail = [values[index] for index in eligible][-max(min_points, 3):]
    steps = [later > earlier for earlier, later in zip(tail, tail[1:])]
    if all(steps):
        why = "the value still rises at the largest sizes (by %.1f %% over the last %d)" % (
            100.0 * (tail[-1] - tail[0]) / tail[0], len(tail))
    elif not any(steps):
        why = "the value still falls at the largest sizes (by %.1f %% over the last %d)" % (
            100.0 * (tail[0] - tail[-1]) / tail[0], len(tail))
    else:
        why = "the values are noisy"
    result["reason"] = ("no %d consecutive sizes (from %g up) within %g %% of their median: %s; "
                        "no plateau is claimed" % (min_points, sizes[first], tolerance_pct, why))
    return result


def regimes(sizes: Sequence[float], plateau: Dict[str, Any], min_size: float = 0.0,
            below: str = BELOW_PLATEAU) -> List[str]:
    """One label per point: ``below`` under the plateau (or under ``min_size``), plateau, beyond plateau, no plateau."""
    labels = []
    members = set(plateau.get("indices") or [])
    lowest = min(plateau["sizes"]) if plateau.get("found") else None
    for index, size in enumerate(sizes):
        if index in members:
            labels.append(IN_PLATEAU)
        elif size < min_size or (lowest is not None and size < lowest):
            labels.append(below)
        elif lowest is not None:
            labels.append(BEYOND_PLATEAU)
        else:
            labels.append(NO_PLATEAU)
    return labels
