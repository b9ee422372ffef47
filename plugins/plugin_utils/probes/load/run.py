"""load: how it runs (light: read for every host before its probes run)."""
from __future__ import annotations

from ...probe_kit.kit import Headline, ProbeRun

RUN = ProbeRun(
    name="load",
    # last: no bandwidth probe may follow sustained load without a cool-down
    run_order=90,
    timeout_s=600,
    # full holds the load three minutes instead of one: slow thermal faults show within it
    profiles={"acceptance": {}, "full": {"duration_s": 180}},
    summary="a sustained bf16 matmul load per GPU with clocks, power, temperature and processes sampled",
    headlines=(Headline("load.correctness"),),
)
