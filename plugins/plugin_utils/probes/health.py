"""health: what a node is before anything loads it (device nodes, cgroup, CUDA init, NVML state)."""
from __future__ import annotations

from ..judge.health_checks import HEALTH_CHECKS
from ..judge.metrics import health_metrics
from ..report_health import health_view
from .declaration import ProbeDeclaration, ProbeSection

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
