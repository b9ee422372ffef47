"""gemm: how it runs (light: read for every host before its probes run)."""
from __future__ import annotations

from typing import Any, Dict, List, Tuple

from ...probe_kit.kit import Handed, Headline, ProbeRun


def gemm_inputs(params: Dict[str, Any], handed: Handed) -> Tuple[Dict[str, Any], List[str]]:
    from .derived import gemm_inputs as derive  # only when gemm runs: it reads the run's stored results, as handed
    return derive(params, handed)


RUN = ProbeRun(
    name="gemm",
    run_order=40,
    timeout_s=900,
    profiles={"acceptance": {}, "full": {"alone_devices": "all"}},
    summary="matmul throughput per dtype over shapes on the roofline, burst and sustained at the power limit",
    derived_params=gemm_inputs,
    needs=("membw",),
    headlines=(
        Headline("gemm.bf16_burst"),
        Headline("gemm.bf16_sustained"),
        Headline("gemm.fp8_burst", needs_datasheet="fp8_dense"),
        Headline("gemm.fp8_sustained", needs_datasheet="fp8_dense"),
        Headline("gemm.correctness"),
    ),
)
