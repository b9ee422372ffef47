"""The sampler's own timing (measure/sampler.py): its actual intervals against the scheduled one, how late each tick
began, how long a round of reads took."""
from __future__ import annotations

import statistics
from typing import Any, Dict, List, Sequence

from probelib.fields import unavailable


def intervals(times: Sequence[float]) -> List[float]:
    """Differences between consecutive times (seconds)."""
    return [later - earlier for earlier, later in zip(times, times[1:])]


def timing_summary(values: Sequence[float], digits: int = 6) -> Any:
    """{median, max, min, mean, count} of seconds; unavailable when empty."""
    if not values:
        return unavailable("fewer than 2 samples: no interval to measure")
    return {"median": round(statistics.median(values), digits), "max": round(max(values), digits),
            "min": round(min(values), digits), "mean": round(statistics.fmean(values), digits), "count": len(values)}


def jitter(times: Sequence[float], lateness: Sequence[float], durations: Sequence[float], interval_s: float,
           missed_ticks: int) -> Dict[str, Any]:
    """The sampler's own bookkeeping: actual intervals against the scheduled one, how late each tick began, how long a
    round of reads took, and the ticks skipped because a round overran its slot."""
    actual = intervals(times)
    return {
        "scheduled_interval_s": interval_s,
        "rounds": len(times),
        "interval_s_actual": timing_summary(actual),
        "lateness_s": timing_summary(list(lateness)) if lateness else unavailable("no tick was taken"),
        "read_duration_s": timing_summary(list(durations)) if durations else unavailable("no tick was taken"),
        "missed_ticks": missed_ticks,
        "max_deviation_pct": round(max(abs(value - interval_s) for value in actual) / interval_s * 100, 2) if actual else None,
    }
