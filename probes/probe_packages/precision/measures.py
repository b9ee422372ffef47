"""Error measures from two sums, in plain Python: sum x^2 of the reference, sum (x - q)^2 of the error.

relative error = ||x - q|| / ||x|| = sqrt(sum (x - q)^2 / sum x^2); SQNR dB = 10 log10(sum x^2 / sum (x - q)^2).
An exact representation (zero error) has relative error 0 and an infinite SQNR, written as null with exact true;
an infinite or NaN error (an overflow to inf) has both null; an all-zero reference makes both undefined (null).
"""
from __future__ import annotations

import math
from typing import Any, Dict, Optional


def relative_error(sum_x2: float, sum_e2: float) -> Optional[float]:
    if not math.isfinite(sum_e2) or sum_x2 <= 0 or not math.isfinite(sum_x2):
        return None
    return math.sqrt(sum_e2 / sum_x2)


def sqnr_db(sum_x2: float, sum_e2: float) -> Optional[float]:
    """None when the error is zero (infinite SQNR: see exact), non-finite, or the reference is all zero."""
    if sum_e2 <= 0 or not math.isfinite(sum_e2) or sum_x2 <= 0 or not math.isfinite(sum_x2):
        return None
    return 10.0 * math.log10(sum_x2 / sum_e2)


def error_summary(sum_x2: float, sum_e2: float) -> Dict[str, Any]:
    """relative_error, sqnr_db, exact and outcome (exact | finite | infinite | undefined) from the two sums."""
    if sum_x2 <= 0:
        outcome = "exact" if sum_e2 == 0 else "undefined"
    elif not math.isfinite(sum_e2):
        outcome = "infinite"
    elif sum_e2 == 0:
        outcome = "exact"
    else:
        outcome = "finite"
    return {"relative_error": 0.0 if outcome == "exact" and sum_x2 > 0 else relative_error(sum_x2, sum_e2),
            "sqnr_db": sqnr_db(sum_x2, sum_e2), "exact": outcome == "exact", "outcome": outcome}
