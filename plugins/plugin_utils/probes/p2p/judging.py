"""p2p: every ordered pair of GPUs, one-way and two-way copy bandwidth, with the link class between them."""
from __future__ import annotations

from typing import Any, Dict, List

from ...probe_kit.kit import Metric, number_or_none, ProbeJudging
from .checks import P2P_CHECKS
from .metrics import WORST_PAIR, WORST_PAIR_BIDIRECTIONAL


def p2p_metrics(data: Dict[str, Any]) -> List[Metric]:
    """The worst pair's unidirectional and bidirectional headline GB/s (host level: the slowest link decides)."""
    metrics: List[Metric] = []
    pairs = [pair for pair in data.get("pairs") or [] if isinstance(pair, dict) and not pair.get("error")]
    for section, spec in (("unidirectional", WORST_PAIR), ("bidirectional", WORST_PAIR_BIDIRECTIONAL)):
        values = [number_or_none((pair.get(section) or {}).get("headline_gbps")) for pair in pairs if isinstance(pair.get(section), dict)]
        values = [value for value in values if value is not None]
        if values:
            metrics.append(Metric.of(spec, None, None, min(values)))
    return metrics


JUDGING = ProbeJudging(
    checks=P2P_CHECKS,
    metrics=p2p_metrics,
    busy_distorts=frozenset({"unidirectional_vs_link_class", "bidirectional_vs_link_class", "pair_vs_host_median"}),
)
