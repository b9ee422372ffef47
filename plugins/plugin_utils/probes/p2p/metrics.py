"""p2p: its metric catalogue, every number the judge compares across hosts and with the previous run."""
from __future__ import annotations

from ...probe_kit.kit import MetricSpec

WORST_PAIR = MetricSpec("p2p.worst_pair_gbps", "Slowest GPU pair", "GB/s", "higher", drift_tolerance=0.10)
WORST_PAIR_BIDIRECTIONAL = MetricSpec("p2p.worst_pair_bidirectional_gbps", "Slowest GPU pair, both ways", "GB/s", "higher",
                                      drift_tolerance=0.10)

METRICS = (WORST_PAIR, WORST_PAIR_BIDIRECTIONAL)
