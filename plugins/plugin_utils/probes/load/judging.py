"""load: a sustained matmul load per GPU, with clocks, power, temperature and processes sampled."""
from __future__ import annotations

from typing import Any, Dict, List

from ...judge.load_checks import LOAD_CHECKS
from ...judge.metrics import Metric
from ...result_fields import number_or_none
from ..judging import ProbeJudging


def load_metrics(data: Dict[str, Any]) -> List[Metric]:
    """Per GPU under the sustained load: the achieved bf16 TFLOP/s (after warm-up), median SM clock, max temperature."""
    metrics: List[Metric] = []
    for gpu in data.get("gpus") or []:
        if not isinstance(gpu, dict) or not isinstance(gpu.get("uuid"), str):
            continue
        load = gpu.get("load") if isinstance(gpu.get("load"), dict) else {}
        active = gpu.get("active") if isinstance(gpu.get("active"), dict) else {}
        for metric_id, value, unit, better in (
                ("load.achieved_tflops", number_or_none(load.get("achieved_tflops_active")), "TFLOP/s", "higher"),
                ("load.sm_clock_mhz", number_or_none((active.get("sm_clock_mhz") or {}).get("median")), "MHz", "higher"),
                ("load.max_temperature_c", number_or_none((active.get("temperature_c") or {}).get("max")), "C", "lower")):
            if value is not None:
                metrics.append(Metric(metric_id, gpu["uuid"], gpu.get("index"), value, unit, better))
    return metrics


JUDGING = ProbeJudging(
    checks=LOAD_CHECKS,
    metrics=load_metrics,
)
