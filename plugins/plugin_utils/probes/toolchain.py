"""toolchain: the driver, CUDA, torch and NCCL a workload would see, and whether they agree."""
from __future__ import annotations

from ..judge.toolchain_checks import TOOLCHAIN_CHECKS
from ..report_toolchain import toolchain_view
from .declaration import ProbeDeclaration, ProbeSection

DECLARATION = ProbeDeclaration(
    name="toolchain",
    run_order=20,
    timeout_s=600,
    profiles={"acceptance": {}, "full": {}, "post_upgrade": {}},
    checks=TOOLCHAIN_CHECKS,
    section=ProbeSection(toolchain_view),
    summary="driver, CUDA, torch and NCCL versions as a workload sees them, and their contracts",
)
