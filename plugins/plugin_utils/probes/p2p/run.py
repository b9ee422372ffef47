"""p2p: how it runs (light: read for every host before its probes run)."""
from __future__ import annotations

from ...probe_kit.kit import Headline, ProbeRun

RUN = ProbeRun(
    name="p2p",
    run_order=60,
    timeout_s=900,
    profiles={"acceptance": {}, "full": {}, "post_upgrade": {}, "interconnect": {}},
    min_gpus=2,
    summary="peer-to-peer copy bandwidth of every ordered GPU pair, one-way and two-way",
    headlines=(Headline("p2p.unidirectional"), Headline("p2p.bidirectional")),
)
