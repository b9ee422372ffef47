"""collective: its metric catalogue, every number the judge compares across hosts and with the previous run."""
from __future__ import annotations

from ...probe_kit.kit import MetricSpec

PEAK_BUSBW = MetricSpec("collective.peak_busbw_gbps", "All-reduce bandwidth", "GB/s", "higher", drift_tolerance=0.10)

METRICS = (PEAK_BUSBW,)
