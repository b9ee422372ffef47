"""gemm: its metric catalogue, every number the judge compares across hosts and with the previous run."""
from __future__ import annotations

from ...probe_kit.kit import MetricSpec

# {(dtype, power state): the calibration shape's matmul rate in that state}
STATE_RATES = {
    ("bf16", "burst"): MetricSpec("gemm.bf16_burst_tflops", "BF16 matmul (burst)", "TFLOP/s", "higher", drift_tolerance=0.10,
                                  baseline_key="bf16_matmul", method="burst"),
    ("bf16", "sustained"): MetricSpec("gemm.bf16_sustained_tflops", "BF16 matmul (sustained)", "TFLOP/s", "higher",
                                      drift_tolerance=0.10, baseline_key="bf16_matmul_sustained", method="sustained"),
    ("fp8_e4m3", "burst"): MetricSpec("gemm.fp8_burst_tflops", "FP8 matmul (burst)", "TFLOP/s", "higher", drift_tolerance=0.10,
                                      baseline_key="fp8_matmul", method="burst"),
    ("fp8_e4m3", "sustained"): MetricSpec("gemm.fp8_sustained_tflops", "FP8 matmul (sustained)", "TFLOP/s", "higher",
                                          drift_tolerance=0.10, baseline_key="fp8_matmul_sustained", method="sustained"),
}

METRICS = tuple(STATE_RATES.values())
