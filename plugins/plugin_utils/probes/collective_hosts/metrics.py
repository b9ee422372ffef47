"""collective_hosts: its metric catalogue, every number the judge compares across hosts and with the previous run.

Its metric is the collective's, per host group: the same peak all-reduce busbw, read from the same data layout by
collective/judging.py's peak_busbw_metrics.
"""
from __future__ import annotations

from ...probe_kit.kit import MetricSpec

PEAK_BUSBW = MetricSpec("collective_hosts.peak_busbw_gbps", "All-reduce bandwidth across hosts", "GB/s", "higher",
                        drift_tolerance=0.10)

METRICS = (PEAK_BUSBW,)
