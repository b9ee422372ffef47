"""Bandwidth from timings: GB/s = bytes / seconds / 1e9, the median of the repeats and their coefficient of variation."""
from __future__ import annotations

import statistics
from typing import Any, Dict, List, Sequence


def gbps(bytes_per_copy: int, seconds_per_copy: float) -> float:
    """One direction, each byte counted once; GB = 1e9 bytes."""
    if seconds_per_copy <= 0:
        raise ValueError("a copy cannot take %r s" % seconds_per_copy)
    return bytes_per_copy / seconds_per_copy / 1e9


def cv_pct(values: Sequence[float]) -> float:
    """Sample standard deviation over the mean, in percent; 0 for fewer than two values."""
    if len(values) < 2:
        return 0.0
    mean = statistics.fmean(values)
    if mean == 0:
        return 0.0
    return statistics.stdev(values) / mean * 100.0


def summarize(bytes_per_copy: int, seconds_per_copy: Sequence[float]) -> Dict[str, Any]:
    """The repeats in GB/s, their median and CV (rounded for the dossier)."""
    if not seconds_per_copy:
        raise ValueError("no repeats to summarize")
    rates: List[float] = [gbps(bytes_per_copy, seconds) for seconds in seconds_per_copy]
    return {
        "repeats_gbps": [round(rate, 3) for rate in rates],
        "median_gbps": round(statistics.median(rates), 3),
        "cv_pct": round(cv_pct(rates), 2),
    }


def pct_of(value: float, reference: float) -> float:
    return round(value / reference * 100.0, 1)
