"""load: its metric catalogue, every number the judge compares across hosts and with the previous run."""
from __future__ import annotations

from ...probe_kit.kit import MetricSpec

ACHIEVED_TFLOPS = MetricSpec("load.achieved_tflops", "Matmul rate under load", "TFLOP/s", "higher", drift_tolerance=0.10)
MAX_TEMPERATURE = MetricSpec("load.max_temperature_c", "Peak temperature under load", "C", "lower", drift_tolerance=0.10)
SM_CLOCK = MetricSpec("load.sm_clock_mhz", "SM clock under load", "MHz", "higher", drift_tolerance=0.10)

METRICS = (ACHIEVED_TFLOPS, MAX_TEMPERATURE, SM_CLOCK)
