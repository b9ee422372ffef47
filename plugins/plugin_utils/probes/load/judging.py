"""load: a sustained matmul load per GPU, with clocks, power, temperature and processes sampled."""
from __future__ import annotations

from typing import Any, Dict, List

from ...probe_kit.kit import Metric, number_or_none, ProbeJudging
from .checks import LOAD_CHECKS
from .correctness_checks import CORRECTNESS_CHECKS
from .metrics import ACHIEVED_TFLOPS, MAX_TEMPERATURE, SM_CLOCK
from .throttle_checks import THROTTLE_CHECKS


def load_metrics(data: Dict[str, Any]) -> List[Metric]:
    """Per GPU under the sustained load: the achieved bf16 TFLOP/s (after warm-up), median SM clock, max temperature."""
    metrics: List[Metric] = []
    for gpu in data.get("gpus") or []:
        if not isinstance(gpu, dict) or not isinstance(gpu.get("uuid"), str):
            continue
        load = gpu.get("load") if isinstance(gpu.get("load"), dict) else {}
        active = gpu.get("active") if isinstance(gpu.get("active"), dict) else {}
        for spec, value in ((ACHIEVED_TFLOPS, number_or_none(load.get("achieved_tflops_active"))),
                            (SM_CLOCK, number_or_none((active.get("sm_clock_mhz") or {}).get("median"))),
                            (MAX_TEMPERATURE, number_or_none((active.get("temperature_c") or {}).get("max")))):
            if value is not None:
                metrics.append(Metric.of(spec, gpu["uuid"], gpu.get("index"), value))
    return metrics


JUDGING = ProbeJudging(
    checks={**LOAD_CHECKS, **THROTTLE_CHECKS, **CORRECTNESS_CHECKS},
    metrics=load_metrics,
    # another job's clocks, power and processes are not this GPU's behaviour under the load; correctness stays judged
    busy_distorts=frozenset(set(LOAD_CHECKS) | set(THROTTLE_CHECKS)),
)
