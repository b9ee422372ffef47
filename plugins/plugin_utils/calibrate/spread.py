"""The numbers of one calibrated key: the median over hosts, how far the hosts lie from it, who lies too far.

The spread is the largest relative deviation of a host's value from the median, max |v - median| / median: a
tolerance of 10 % then means no host of the batch lies more than 10 % from the value it calibrates, the same
relative change the metric's drift check allows a host between two runs (MetricSpec.drift_tolerance).
"""
from __future__ import annotations

import statistics
from dataclasses import dataclass
from typing import Dict, List, Mapping, Tuple

MIN_HOSTS = 3
SPREAD_MEASURE = "the largest deviation of a host's value from the median, relative to the median"


def rounded(value: float) -> float:
    """A host's value as the file states it; the median is taken over these, so the file's value is their median."""
    return round(float(value), 2)


@dataclass(frozen=True)
class Spread:
    median: float
    spread: float                                   # a fraction (0.012 is 1.2 %)
    deviations: Tuple[Tuple[str, float, float], ...]  # (host, value, relative deviation), in host order
    tolerance: float

    def outliers(self) -> List[Tuple[str, float, float]]:
        return [item for item in self.deviations if abs(item[2]) > self.tolerance]


def spread_of(values: Mapping[str, float], tolerance: float) -> Spread:
    """values: {host: its value} (at least one, each > 0); the median of the rounded values and each one's deviation."""
    held: Dict[str, float] = {host: rounded(value) for host, value in sorted(values.items())}
    median = rounded(statistics.median(held.values()))
    deviations = tuple((host, value, (value - median) / median) for host, value in held.items())
    return Spread(median, max(abs(item[2]) for item in deviations), deviations, tolerance)


def percent(fraction: float) -> str:
    return "%.1f %%" % (100.0 * fraction)
