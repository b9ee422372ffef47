"""collective: the all-reduce across the host's GPUs, swept over message sizes."""
from __future__ import annotations

from ..judge.interconnect_checks import COLLECTIVE_CHECKS
from ..judge.metrics import collective_peak_metrics
from ..report_interconnect import collective_view
from .declaration import ProbeDeclaration, ProbeSection

DECLARATION = ProbeDeclaration(
    name="collective",
    run_order=70,
    timeout_s=900,
    profiles={"acceptance": {}, "full": {}, "interconnect": {}},
    checks=COLLECTIVE_CHECKS,
    metrics=collective_peak_metrics("collective"),
    section=ProbeSection(collective_view),
    min_gpus=2,
    summary="NCCL all-reduce bus bandwidth across the host's GPUs over message sizes, data verified",
)
