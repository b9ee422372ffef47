"""Bandwidth from timings: GB/s = bytes / seconds / 1e9, the median of the repeats and their coefficient of variation."""
from __future__ import annotations

import statistics
from typing import Any, Dict, List, Sequence

from probelib.fields import unavailable
from probelib.sweep import CV_NEEDS_TWO, cv_pct


def gbps(bytes_per_copy: int, seconds_per_copy: float) -> float:
    """One direction, each byte counted once; GB = 1e9 bytes."""
    if seconds_per_copy <= 0:
        raise ValueError("a copy cannot take %r s" % seconds_per_copy)
    return bytes_per_copy / seconds_per_copy / 1e9


def summarize(bytes_per_copy: int, seconds_per_copy: Sequence[float]) -> Dict[str, Any]:
    """The repeats in GB/s, their median and CV (rounded for the dossier; unavailable for a single repeat)."""
    if not seconds_per_copy:
        raise ValueError("no repeats to summarize")
    rates: List[float] = [gbps(bytes_per_copy, seconds) for seconds in seconds_per_copy]
    cv = cv_pct(rates)
    return {
        "repeats_gbps": [round(rate, 3) for rate in rates],
        "median_gbps": round(statistics.median(rates), 3),
        "cv_pct": round(cv, 2) if cv is not None else unavailable(CV_NEEDS_TWO),
    }


def pct_of(value: float, reference: float) -> float:
    return round(value / reference * 100.0, 1)
