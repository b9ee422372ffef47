"""collective: the all-reduce across the host's GPUs, swept over message sizes."""
from __future__ import annotations

from ...probe_kit.kit import ProbeJudging, peak_busbw_metrics
from .checks import COLLECTIVE_CHECKS
from .metrics import PEAK_BUSBW

JUDGING = ProbeJudging(
    checks=COLLECTIVE_CHECKS,
    metrics=peak_busbw_metrics(PEAK_BUSBW),
    busy_distorts=frozenset({"busbw_largest", "p2p_gain"}),
)
