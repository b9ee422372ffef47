"""collective: the all-reduce across the host's GPUs, swept over message sizes."""
from __future__ import annotations

from typing import Any, Callable, Dict, List

from ...judge.metrics import Metric
from ...result_fields import number_or_none
from ...probe_kit.judging import ProbeJudging
from ...probe_kit.metric_catalogue import MetricSpec
from .checks import COLLECTIVE_CHECKS
from .metrics import PEAK_BUSBW


def peak_busbw_metrics(spec: MetricSpec) -> Callable[[Dict[str, Any]], List[Metric]]:
    """The metrics of collective and collective_hosts (the same data layout), as the probe's catalogue declares them."""
    def metrics(data: Dict[str, Any]) -> List[Metric]:
        """The default curve's peak all-reduce busbw on GPUs (the CPU path is not a GPU interconnect metric)."""
        plan = data.get("plan") if isinstance(data.get("plan"), dict) else {}
        if plan.get("kind") != "cuda":
            return []
        for curve in data.get("curves") or []:
            if isinstance(curve, dict) and curve.get("name") == "default" and not curve.get("error"):
                value = number_or_none(curve.get("peak_busbw_gbps"))
                if value is not None:
                    return [Metric.of(spec, None, None, value)]
        return []
    return metrics


JUDGING = ProbeJudging(
    checks=COLLECTIVE_CHECKS,
    metrics=peak_busbw_metrics(PEAK_BUSBW),
    busy_distorts=frozenset({"busbw_largest", "p2p_gain"}),
)
