"""memtest: its metric catalogue."""
from __future__ import annotations

from ...probe_kit.kit import MetricSpec

PATTERN_RATE = MetricSpec("memtest.pattern_rate_gbps", "Memory test rate", "GB/s", "higher", drift_tolerance=None,
                          drift_source=("not compared between runs: the rate follows the budget's mix of patterns and "
                                        "workers; compared across the SKU's hosts run with the same parameters"))
METRICS = (PATTERN_RATE,)
