"""membw: device memory bandwidth, a copy swept over sizes to its plateau."""
from __future__ import annotations

from ..judge.measurement_checks import MEMBW_CHECKS
from ..judge.metrics import membw_metrics
from ..report_measurements import membw_view
from .declaration import ProbeDeclaration, ProbeSection

DECLARATION = ProbeDeclaration(
    name="membw",
    run_order=30,
    timeout_s=600,
    # full repeats the headline size five times instead of three: a tighter median and spread
    profiles={"quick": {"quick": True}, "acceptance": {}, "full": {"repeats": 5}, "post_upgrade": {}},
    checks=MEMBW_CHECKS,
    metrics=membw_metrics,
    section=ProbeSection(membw_view),
    summary="device memory copy bandwidth swept over sizes to its plateau, repeated",
)
