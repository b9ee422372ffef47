"""Distribution statistics of one tensor, computed in float64 on whatever device the tensor is on.

std is the population standard deviation (divide by n); kurtosis is Pearson's (non-excess) m4 / m2^2, 3 for a
Gaussian; an outlier is an element with |x - mean| > 6 std; channels are the rows (dim 0) of the tensor, the rest
of each row flattened; medians are true medians (the mean of the two middle values for an even count).
"""
from __future__ import annotations

import math
from typing import Any, Dict

from probelib.fields import unavailable

OUTLIER_SIGMA = 6.0
FP16_MAX = 65504.0
FP16_SMALLEST_SUBNORMAL = 2.0 ** -24
FP16_SMALLEST_NORMAL = 2.0 ** -14


def _item(value: Any) -> float:
    return float(value.item()) if hasattr(value, "item") else float(value)


def true_median(values: Any) -> float:
    """Median of a 1-D torch tensor: the middle value, or the mean of the two middle values for an even count."""
    ordered = values.flatten().sort().values
    count = ordered.numel()
    if count == 0:
        raise ValueError("the median of no values")
    middle = count // 2
    if count % 2:
        return _item(ordered[middle])
    return (_item(ordered[middle - 1]) + _item(ordered[middle])) / 2.0


def moments(x: Any) -> Dict[str, Any]:
    """count, min, max, absmax, mean, std (population), kurtosis_pearson, outlier count and fraction."""
    values = x.detach().flatten().double()
    count = values.numel()
    mean = values.mean()
    centered = values - mean
    m2 = _item((centered * centered).mean())
    m4 = _item((centered ** 4).mean())
    std = math.sqrt(m2)
    outliers = int(_item((centered.abs() > OUTLIER_SIGMA * std).sum())) if std > 0 else 0
    return {
        "element_count": count,
        "min": _item(values.min()),
        "max": _item(values.max()),
        "absmax": _item(values.abs().max()),
        "mean": _item(mean),
        "std": std,
        "kurtosis_pearson": m4 / (m2 * m2) if m2 > 0 else unavailable("the tensor is constant: kurtosis is 0 / 0"),
        "outlier_count": outliers,
        "outlier_fraction": outliers / count,
    }


def channel_absmax(x: Any) -> Any:
    """Spread of the per-row absolute maxima: channels, min, median, max, max_over_median; unavailable for 1-D."""
    if x.dim() < 2:
        return unavailable("a %d-D tensor has no channel axis" % x.dim())
    rows = x.detach().reshape(x.shape[0], -1).abs().amax(dim=1).double()
    median = true_median(rows)
    spread = {"axis": 0, "channels": rows.numel(), "min": _item(rows.min()), "median": median, "max": _item(rows.max())}
    spread["max_over_median"] = spread["max"] / median if median > 0 else unavailable("the median row absmax is 0")
    return spread


def fp16_range(x: Any) -> Dict[str, Any]:
    """How many elements lie outside fp16's range: beyond its largest finite value, below its smallest subnormal.

    Compared in the tensor's own float32: the three limits are powers of two or 65504, exact in float32.
    """
    magnitude = x.detach().flatten().abs()
    nonzero = magnitude > 0
    return {
        "max_finite": FP16_MAX,
        "smallest_subnormal": FP16_SMALLEST_SUBNORMAL,
        "smallest_normal": FP16_SMALLEST_NORMAL,
        "above_max_count": int(_item((magnitude > FP16_MAX).sum())),
        "below_smallest_subnormal_count": int(_item((nonzero & (magnitude < FP16_SMALLEST_SUBNORMAL)).sum())),
        "subnormal_count": int(_item(((magnitude >= FP16_SMALLEST_SUBNORMAL) & (magnitude < FP16_SMALLEST_NORMAL)).sum())),
        "zero_count": int(_item((~nonzero).sum())),
    }


def tensor_stats(x: Any) -> Dict[str, Any]:
    stats = moments(x)
    stats["channel_absmax"] = channel_absmax(x)
    return stats
