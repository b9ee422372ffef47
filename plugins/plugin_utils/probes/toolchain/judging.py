"""toolchain: the driver, CUDA, torch and NCCL a workload would see, and whether they agree."""
from __future__ import annotations

from ...probe_kit.kit import ProbeJudging
from .checks import TOOLCHAIN_CHECKS


JUDGING = ProbeJudging(
    checks=TOOLCHAIN_CHECKS,
)
