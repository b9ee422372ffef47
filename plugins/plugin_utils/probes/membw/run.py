"""membw: how it runs (light: read for every host before its probes run)."""
from __future__ import annotations

from typing import Any, Dict

from ...probe_kit.kit import Headline, ProbeRun


def membw_gives(data: Dict[str, Any]) -> Dict[str, Any]:
    from .judging import membw_given  # only when a probe that needs membw derives its parameters
    return membw_given(data)


RUN = ProbeRun(
    name="membw",
    run_order=30,
    timeout_s=600,
    # full repeats the headline size five times instead of three (a tighter median and spread) and measures every GPU
    # alone, not only the first
    profiles={"quick": {"quick": True}, "acceptance": {}, "full": {"repeats": 5, "alone_devices": "all"}, "post_upgrade": {}},
    summary="device memory copy bandwidth swept over sizes to its plateau, repeated",
    gives=membw_gives,
    headlines=(Headline("membw.bandwidth"),),
)
