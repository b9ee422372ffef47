"""precision: how it runs (light: read for every host before its probes run)."""
from __future__ import annotations

from ...probe_kit.kit import ProbeRun

RUN = ProbeRun(
    name="precision",
    run_order=80,
    timeout_s=600,
    profiles={"acceptance": {}, "full": {}},
    needs_gpu=False,
    judges_nothing="quantisation error of a checkpoint explains a format choice; it is no GPU fault",
    summary="the quantisation error of a checkpoint's tensors in each number format",
)
