"""memtest: how it runs (light: read for every host before its probes run)."""
from __future__ import annotations

from ...probe_kit.kit import Headline, ProbeRun

RUN = ProbeRun(
    name="memtest",
    # after membw (a bandwidth probe runs on a cool GPU), before gemm and the sustained load
    run_order=32,
    # the full profile's 120 s budget, the workers' start (torch, CUDA context, allocation) and the NVML reads
    timeout_s=600,
    # budget_s: seconds of pattern passes on each GPU (all GPUs at once); quick does not run it
    profiles={"acceptance": {"budget_s": 30}, "full": {"budget_s": 120}, "post_upgrade": {"budget_s": 30}},
    summary="device memory pattern tests over most of every GPU's free memory, all GPUs at once; ECC and remapped rows before and after",
    headlines=(Headline("memtest.errors"),),
)
