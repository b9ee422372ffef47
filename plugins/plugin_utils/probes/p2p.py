"""p2p: every ordered pair of GPUs, one-way and two-way copy bandwidth, with the link class between them."""
from __future__ import annotations

from ..judge.interconnect_checks import P2P_CHECKS
from ..judge.metrics import p2p_metrics
from ..report_interconnect import p2p_view
from .declaration import ProbeDeclaration, ProbeSection

DECLARATION = ProbeDeclaration(
    name="p2p",
    run_order=60,
    timeout_s=900,
    profiles={"acceptance": {}, "full": {}, "post_upgrade": {}, "interconnect": {}},
    checks=P2P_CHECKS,
    metrics=p2p_metrics,
    section=ProbeSection(p2p_view),
    min_gpus=2,
    summary="peer-to-peer copy bandwidth of every ordered GPU pair, one-way and two-way",
)
