"""hostbw: how it runs (light: read for every host before its probes run)."""
from __future__ import annotations

from ...probe_kit.kit import Headline, ProbeRun

RUN = ProbeRun(
    name="hostbw",
    run_order=50,
    timeout_s=600,
    # full measures every GPU alone, not only the first
    profiles={"acceptance": {}, "full": {"alone_devices": "all"}},
    summary="host-to-device and device-to-host copy bandwidth per GPU, pinned and pageable",
    headlines=(Headline("hostbw.pinned_h2d"), Headline("hostbw.pinned_d2h")),
)
