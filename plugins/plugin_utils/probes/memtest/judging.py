"""memtest: what the judge is told about it."""
from __future__ import annotations

from typing import Any, Dict, List

from ...probe_kit.kit import Metric, device_records, number_or_none, ProbeJudging
from .counter_checks import ecc_increase
from .coverage_checks import coverage
from .error_checks import pattern_errors
from .metrics import PATTERN_RATE
from .records import workers


def memtest_metrics(data: Dict[str, Any]) -> List[Metric]:
    """Each GPU's pattern rate: the sum of its workers' rates (they ran at once)."""
    found = []
    records = workers(data)
    for entry in device_records(data):
        device = entry.get("device") if isinstance(entry.get("device"), dict) else {}
        if device.get("kind") != "cuda" or not isinstance(device.get("uuid"), str):
            continue
        rates = [number_or_none((record.get("result") or {}).get("gbps")) for record in records
                 if record.get("device_index") == device.get("index") and record.get("status") == "ok"]
        if rates and None not in rates:
            found.append(Metric.of(PATTERN_RATE, device["uuid"], device.get("index"), sum(rates)))
    return found


JUDGING = ProbeJudging(checks={"pattern_errors": pattern_errors, "ecc_increase": ecc_increase, "coverage": coverage},
                       metrics=memtest_metrics,
                       # the memory another job holds is not tested; a pattern error stays a finding
                       busy_distorts=frozenset({"coverage"}))
