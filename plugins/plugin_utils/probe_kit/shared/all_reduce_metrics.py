"""The all-reduce's metrics, shared by collective and collective_hosts (the same result layout)."""
from __future__ import annotations

from typing import Any, Callable, Dict, List

from ...judge.metrics import Metric
from ...metric_spec import MetricSpec
from ...result_fields import number_or_none


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
