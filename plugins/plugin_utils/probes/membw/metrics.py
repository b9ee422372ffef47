"""membw: its metric catalogue, every number the judge compares across hosts and with the previous run."""
from __future__ import annotations

from ...probe_kit.kit import MetricSpec

BANDWIDTH = MetricSpec("membw.bandwidth_gbps", "Memory bandwidth", "GB/s", "higher", drift_tolerance=0.10,
                       baseline_key="torch_copy_4gib")

METRICS = (BANDWIDTH,)
