"""toolchain: the driver, CUDA, torch and NCCL a workload would see, and whether they agree."""
from __future__ import annotations

from ...judge.toolchain_checks import TOOLCHAIN_CHECKS
from ..judging import ProbeJudging


JUDGING = ProbeJudging(
    checks=TOOLCHAIN_CHECKS,
)
