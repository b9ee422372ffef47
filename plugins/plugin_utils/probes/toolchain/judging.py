"""toolchain: the driver, CUDA, torch and NCCL a workload would see, and whether they agree."""
from __future__ import annotations

from ...judge.summaries import Summary, summaries_check
from ..judging import ProbeJudging
from .checks import TOOLCHAIN_CHECKS

# The CUDA device count of the nvml_cuda_agree contract and the UUIDs it lists (recorded only where every UUID was read).
SUMMARIES = (Summary("details.cuda_device_count", "details.cuda_uuids", each="contracts"),)

JUDGING = ProbeJudging(
    checks={**TOOLCHAIN_CHECKS, "summaries_agree": summaries_check(SUMMARIES)},
)
