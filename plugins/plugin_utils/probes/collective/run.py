"""collective: how it runs (light: read for every host before its probes run)."""
from __future__ import annotations

from ...probe_kit.kit import Headline, ProbeRun

RUN = ProbeRun(
    name="collective",
    run_order=70,
    timeout_s=900,
    profiles={"acceptance": {}, "full": {}, "interconnect": {}},
    min_gpus=2,
    summary="NCCL all-reduce bus bandwidth across the host's GPUs over message sizes, data verified",
    headlines=(Headline("collective.verified"), Headline("collective.busbw")),
)
