"""Small statistics over sampled values: median / max / min, and a fraction."""
from __future__ import annotations

import statistics
from typing import Any, Optional, Sequence

from probelib.fields import numbers, unavailable


def spread(values: Sequence[Any], digits: int = 3) -> Any:
    """{median, max, min, samples} of the numbers among ``values``; unavailable when there is none."""
    present = numbers(values)
    if not present:
        return unavailable("no sample of this value was read in the window")
    return {"median": round(statistics.median(present), digits), "max": round(max(present), digits),
            "min": round(min(present), digits), "samples": len(present)}


def fraction(count: int, total: int) -> Optional[float]:
    return round(count / total, 4) if total else None
