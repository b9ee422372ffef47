"""health: how it runs (light: read for every host before its probes run)."""
from __future__ import annotations

from ...probe_kit.kit import Headline, ProbeRun

RUN = ProbeRun(
    name="health",
    run_order=10,
    timeout_s=300,
    # health alone is the fastest check of every host, e.g. a nightly sweep of a large fleet
    profiles={"health": {}, "quick": {}, "acceptance": {}, "full": {}, "post_upgrade": {}, "interconnect": {}},
    summary="device nodes, cgroup, CUDA init, NVML inventory and state per GPU",
    # NVML, sysfs and the kernel log only: CUDA is not initialised next to a job (a context on every GPU takes memory)
    disturbs_job=False,
    quiet_params={"cuda_init": False},
    headlines=(Headline("health.cuda_init"), Headline("health.device_majors"), Headline("health.gpu_count")),
)
