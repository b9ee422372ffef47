"""fabric: what the judge is told about it."""
from __future__ import annotations

from ...probe_kit.kit import ProbeJudging
from .affinity_checks import AFFINITY_CHECKS
from .bandwidth import BANDWIDTH_CHECKS, bandwidth_metrics
from .counter_checks import COUNTER_CHECKS
from .ethernet_checks import ETHERNET_CHECKS
from .firmware import FIRMWARE_CHECKS, fabric_settings
from .port_checks import PORT_CHECKS
from .rdma_path_checks import RDMA_PATH_CHECKS

JUDGING = ProbeJudging(
    checks=dict(PORT_CHECKS, **COUNTER_CHECKS, **RDMA_PATH_CHECKS, **AFFINITY_CHECKS, **FIRMWARE_CHECKS, **ETHERNET_CHECKS,
                **BANDWIDTH_CHECKS),
    metrics=bandwidth_metrics,
    settings=fabric_settings,
)
