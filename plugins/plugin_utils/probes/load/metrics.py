"""load: its metric catalogue, every number the judge compares across hosts and with the previous run."""
from __future__ import annotations

from ..metric_catalogue import MetricSpec

METRICS = (
    MetricSpec("load.achieved_tflops", "Matmul rate under load", "TFLOP/s", "higher", drift_tolerance=0.10),
    MetricSpec("load.max_temperature_c", "Peak temperature under load", "C", "lower", drift_tolerance=0.10),
    MetricSpec("load.sm_clock_mhz", "SM clock under load", "MHz", "higher", drift_tolerance=0.10),
)
