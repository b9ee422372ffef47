"""hostbw: host-to-device and device-to-host copy bandwidth, pinned and pageable."""
from __future__ import annotations

from ..judge.measurement_checks import HOSTBW_CHECKS
from ..judge.metrics import hostbw_metrics
from ..report_measurements import hostbw_view
from .declaration import ProbeDeclaration, ProbeSection

DECLARATION = ProbeDeclaration(
    name="hostbw",
    run_order=50,
    timeout_s=600,
    profiles={"acceptance": {}, "full": {}},
    checks=HOSTBW_CHECKS,
    metrics=hostbw_metrics,
    section=ProbeSection(hostbw_view),
    summary="host-to-device and device-to-host copy bandwidth per GPU, pinned and pageable",
)
