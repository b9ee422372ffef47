# -*- coding: utf-8 -*-
# Copyright: gpufleet.validation contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""A verdict from repeated measurements: decided on their median, never by one lucky or unlucky repeat.

Where the repeats straddle the fail threshold (some above, some below) the outcome of one run would be a coin flip, so
the decision is its own ``warn`` (unstable) instead of a pass or a fail; fewer repeats than MIN_REPEATS cannot fail a
host either. Pure Python.
"""
from __future__ import annotations

import statistics
from typing import NamedTuple, Optional, Sequence

from ..report.number_format import format_number, format_quantity

MIN_REPEATS = 3


class Decision(NamedTuple):
    status: str              # pass | warn | fail
    value: float             # the median of the repeats
    low: float
    high: float
    count: int
    spread_pct: float        # (max - min) / median, percent
    unstable: bool
    note: str                # "" or a sentence on why the decision is not the plain comparison


def finite(samples: Optional[Sequence[object]]) -> list:
    return [float(value) for value in samples or () if isinstance(value, (int, float)) and not isinstance(value, bool)]


def decide(samples: Sequence[float], fail_at: float, warn_at: float, repeated: bool = True) -> Decision:
    """Higher is better: median >= warn_at passes, >= fail_at warns, below fails (with the two exceptions above).

    repeated=False: ``samples`` is one value from a probe that does not repeat this headline (p2p's plateau, the
    collective's largest message); it is decided as it stands.
    """
    values = sorted(samples)
    center = statistics.median(values)
    low, high = values[0], values[-1]
    spread = 100.0 * (high - low) / center if center else 0.0
    status = "pass" if center >= warn_at else ("warn" if center >= fail_at else "fail")
    unstable = low < fail_at <= high
    note = ""
    if unstable:
        status = "warn"
        note = ("unstable: the %d repeats (%s to %s) straddle the fail threshold %s, so one run could pass and the next "
                "fail; measure again on a quiet GPU before deciding"
                % (len(values), format_number(low), format_number(high), format_number(fail_at)))
    elif repeated and len(values) < MIN_REPEATS and status == "fail":
        status = "warn"
        note = "only %d repeat(s), fewer than the %d a failing verdict needs" % (len(values), MIN_REPEATS)
    return Decision(status, center, low, high, len(values), spread, unstable, note)


def describe_repeats(decision: Decision, unit: str) -> str:
    """'median of 3 repeats (781-790 TFLOP/s, spread 1.2 %)' or '1 measurement'."""
    if decision.count == 1:
        return "1 measurement"
    return "median of %d repeats (%s-%s, spread %s)" % (
        decision.count, format_number(decision.low), format_quantity(decision.high, unit),
        format_quantity(decision.spread_pct, "%"))
