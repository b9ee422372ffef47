"""hostbw: its metric catalogue, every number the judge compares across hosts and with the previous run."""
from __future__ import annotations

from ...probe_kit.kit import MetricSpec

# {direction: the pinned copy's bandwidth in that direction}
PINNED = {
    "h2d": MetricSpec("hostbw.pinned_h2d_gbps", "Host-to-GPU bandwidth", "GB/s", "higher", drift_tolerance=0.10,
                      baseline_key="nvbandwidth_h2d_ce"),
    "d2h": MetricSpec("hostbw.pinned_d2h_gbps", "GPU-to-host bandwidth", "GB/s", "higher", drift_tolerance=0.10,
                      baseline_key="nvbandwidth_d2h_ce"),
}

METRICS = tuple(PINNED.values())
