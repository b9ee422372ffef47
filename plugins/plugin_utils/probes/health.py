"""health: what a node is before anything loads it (device nodes, cgroup, CUDA init, NVML state)."""
from __future__ import annotations

from typing import Any, Dict, List

from ..judge.health_checks import HEALTH_CHECKS
from ..judge.metrics import Metric
from ..report_health import health_view
from ..result_fields import is_unavailable, number_or_none
from .declaration import ProbeDeclaration, ProbeSection


def health_metrics(data: Dict[str, Any]) -> List[Metric]:
    """Idle power draw (W), temperature (C) and memory used (MiB) per GPU, CUDA init duration (s) per host."""
    metrics: List[Metric] = []
    gpus = data.get("gpus")
    for gpu in gpus if isinstance(gpus, list) else []:
        uuid = gpu.get("uuid") if isinstance(gpu.get("uuid"), str) else None
        index = gpu.get("index") if isinstance(gpu.get("index"), int) else None
        if uuid is None:
            continue
        for metric_id, section, key, unit in (
                ("health.idle_power_w", "power", "draw_w", "W"),
                ("health.temperature_c", "temperature", "gpu_c", "C"),
                ("health.memory_used_mib", "memory", "used_mib", "MiB")):
            part = gpu.get(section)
            value = number_or_none(part.get(key)) if isinstance(part, dict) and not is_unavailable(part) else None
            if value is not None:
                metrics.append(Metric(metric_id, uuid, index, value, unit, "lower"))
    init = data.get("cuda_init")
    if isinstance(init, dict) and init.get("ok"):
        duration = number_or_none(init.get("duration_s"))
        if duration is not None:
            metrics.append(Metric("health.cuda_init_s", None, None, duration, "s", "lower"))
    return metrics


DECLARATION = ProbeDeclaration(
    name="health",
    run_order=10,
    timeout_s=300,
    # health alone is the fastest check of every host, e.g. a nightly sweep of a large fleet
    profiles={"health": {}, "quick": {}, "acceptance": {}, "full": {}, "post_upgrade": {}, "interconnect": {}},
    checks=HEALTH_CHECKS,
    metrics=health_metrics,
    section=ProbeSection(health_view, "sections/health.html.j2", "sections/health.md.j2"),
    summary="device nodes, cgroup, CUDA init, NVML inventory and state per GPU",
)
