"""toolchain: how it runs (light: read for every host before its probes run)."""
from __future__ import annotations

from ...probe_kit.kit import ProbeRun

RUN = ProbeRun(
    name="toolchain",
    run_order=20,
    timeout_s=600,
    profiles={"acceptance": {}, "full": {}, "post_upgrade": {}},
    summary="driver, CUDA, torch and NCCL versions as a workload sees them, and their contracts",
)
