"""membw: how it runs (light: read for every host before its probes run)."""
from __future__ import annotations

from ...probe_kit.declaration import Headline, ProbeRun

RUN = ProbeRun(
    name="membw",
    run_order=30,
    timeout_s=600,
    # full repeats the headline size five times instead of three (a tighter median and spread) and measures every GPU
    # alone, not only the first
    profiles={"quick": {"quick": True}, "acceptance": {}, "full": {"repeats": 5, "alone_devices": "all"}, "post_upgrade": {}},
    summary="device memory copy bandwidth swept over sizes to its plateau, repeated",
    headlines=(Headline("membw.bandwidth"),),
)
