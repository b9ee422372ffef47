"""fusion: how it runs (light: read for every host before its probes run)."""
from __future__ import annotations

from typing import Any, Dict, List, Tuple

from ...probe_kit.kit import Handed, ProbeRun


def fusion_inputs(params: Dict[str, Any], handed: Handed) -> Tuple[Dict[str, Any], List[str]]:
    from .derived import fusion_inputs as derive  # only when fusion runs: it reads membw's result, as membw gives it
    return derive(params, handed)


RUN = ProbeRun(
    name="fusion",
    run_order=35,
    timeout_s=300,
    # full: every GPU alone too; the rules judge the together phase only (fusion.together_bandwidth): how much a
    # compiler's kernel fusion saves explains where an elementwise chain's time goes, a software stack's property
    profiles={"acceptance": {}, "full": {"alone_devices": "all"}},
    summary="an elementwise chain unfused (4 eager kernels) and fused (torch.compile), its HBM traffic counted",
    derived_params=fusion_inputs,
    needs=("membw",),
)
