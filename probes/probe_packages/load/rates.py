"""Matrix rates from the load's CUDA-event checkpoints (pure): the whole timed window, the active window, and a series
of about one value per second for the dossier's plot."""
from __future__ import annotations

from typing import Any, List, Optional, Sequence

from probelib.fields import unavailable
from probelib.sweep import significant


def tflops(flop: float, seconds: float) -> Optional[float]:
    # Significant digits, not two decimals: the CPU path's rates are thousandths of a TFLOP/s and rounded to 0.0.
    return significant(flop / seconds / 1e12, 5) if seconds > 0 else None


def achieved(products: int, elapsed_ms: float, flop_per_product: int) -> Any:
    """TFLOP/s over the timed window: products x flop / GPU time between the start event and the last checkpoint."""
    rate = tflops(products * float(flop_per_product), elapsed_ms / 1000.0)
    return rate if rate is not None else unavailable("no product completed in the timed window")


def rate_after(checkpoint_ms: Sequence[float], per_checkpoint: int, flop_per_product: int, from_ms: float) -> Any:
    """TFLOP/s from the first checkpoint at or after ``from_ms`` (GPU time since the start event) to the last one."""
    later = [index for index, value in enumerate(checkpoint_ms) if value >= from_ms]
    if len(later) < 2:
        return unavailable("fewer than 2 checkpoints after %.3f s of GPU time" % (from_ms / 1000.0))
    first, last = later[0], len(checkpoint_ms) - 1
    products = (last - first) * per_checkpoint
    return tflops(products * float(flop_per_product), (checkpoint_ms[last] - checkpoint_ms[first]) / 1000.0)


def series(checkpoint_ms: Sequence[float], per_checkpoint: int, flop_per_product: int, start_s: float,
           bucket_s: float = 1.0) -> List[List[float]]:
    """[[t_s, tflops]] per bucket of at least ``bucket_s`` of GPU time; t_s is the bucket's end on the load's clock
    (start_s, the host time of the start event, plus the GPU time since it). The last, shorter bucket is kept."""
    points: List[List[float]] = []
    bucket_start_ms = 0.0
    checkpoints_in = 0
    for index, value in enumerate(checkpoint_ms):
        checkpoints_in += 1
        last = index == len(checkpoint_ms) - 1
        if value - bucket_start_ms >= bucket_s * 1000.0 or last:
            rate = tflops(checkpoints_in * per_checkpoint * float(flop_per_product), (value - bucket_start_ms) / 1000.0)
            if rate is not None:
                points.append([round(start_s + value / 1000.0, 3), rate])
            bucket_start_ms = value
            checkpoints_in = 0
    return points
