"""Which hosts of a judged run may calibrate a SKU, and each one's value of every headline metric.

A headline metric is one the metric catalogue holds against a baseline known_good key (MetricSpec.baseline_key). A
host takes part when its verdict is none of fail, error, unreachable and none of its checks fails or errs except for
want of a reference (the skip or warn a measurement without a known-good value gets). A GPU's value counts when the
host's check of that metric on that GPU compared it (pass or warn against a known-good value) or left it for want of
one: a GPU whose check skipped it for another reason (measured on the CPU, at a lower power limit, a busy GPU, not
measured) or whose rule made no check (disabled) gives no value. The value is what the judge compares: the median of
the measurement's repeats, else its value; a host's value is the median over its GPUs.
"""
from __future__ import annotations

import statistics
from dataclasses import dataclass, field
from typing import Any, Dict, Iterable, List, Mapping, Optional, Sequence, Tuple

from ..judge.model import Check, HostVerdict
from ..judge.not_compared import NO_KNOWN_GOOD, PEERS_ONLY_SOURCE
from ..metric_spec import MetricSpec

REFUSED_VERDICTS = ("fail", "error", "unreachable")
NO_USABLE_BASELINE = "no usable baseline"


@dataclass(frozen=True)
class GpuValue:
    uuid: str
    value: float
    conditions: Tuple[Tuple[str, float], ...] = ()  # (key, value) the measurement was taken under (power_limit_w)


@dataclass
class HostValues:
    """One host's GPU values of each metric id, and why a GPU's value was left out."""

    host: str
    gpus: Dict[str, List[GpuValue]] = field(default_factory=dict)
    left_out: Dict[str, List[str]] = field(default_factory=dict)
    dates: List[str] = field(default_factory=list)          # the started date of each result a value came from
    drivers: List[str] = field(default_factory=list)        # the driver versions its results' environments name

    def value(self, metric_id: str) -> Optional[float]:
        found = self.gpus.get(metric_id)
        return statistics.median(gpu.value for gpu in found) if found else None


def for_want_of_a_reference(check: Check) -> bool:
    """A check that is not a finding about the host: its measurement had no known-good value to be held against."""
    return (check.reference_source.startswith(PEERS_ONLY_SOURCE) or NO_KNOWN_GOOD in check.reason
            or NO_USABLE_BASELINE in check.reason)


def why_unhealthy(verdict: HostVerdict) -> str:
    """Why the host cannot calibrate a baseline ("" when it can)."""
    if verdict.verdict in REFUSED_VERDICTS:
        return "verdict %s (%s)" % (verdict.verdict, "; ".join(verdict.reasons[:2]) or "no reason recorded")
    failing = [check for check in verdict.checks if check.status in ("fail", "error") and not for_want_of_a_reference(check)]
    if failing:
        return "check %s is %s: %s" % (failing[0].id, failing[0].status, failing[0].reason)
    return ""


def compared(check: Check) -> bool:
    """The check held the GPU's value against a reference or left it for want of one."""
    if for_want_of_a_reference(check):
        return check.status in ("skip", "warn")
    return check.status in ("pass", "warn") and check.reference is not None


def headline_rules(rules: Mapping[str, Any], baseline_checks: Mapping[str, Mapping[str, MetricSpec]]) -> Dict[str, MetricSpec]:
    """{rule id: the metric it holds against a known-good value}, of the rules whose check is a probe's baseline check."""
    found = {}
    for rule in rules.get("rules") or []:
        spec = (baseline_checks.get(rule.get("probe")) or {}).get(rule.get("check"))
        if spec is not None and spec.baseline_key:
            found[rule["id"]] = spec
    return found


def gpu_values(host: str, verdict: HostVerdict, envelopes: Mapping[str, Mapping[str, Any]], measurements_of: Mapping[str, Any],
               rule_metrics: Mapping[str, MetricSpec]) -> HostValues:
    """The host's values of every headline metric. measurements_of: {probe: measurements(data)} of the probes with
    baseline checks; rule_metrics: headline_rules()."""
    rules_of_metric: Dict[str, List[str]] = {}
    for rule_id, spec in rule_metrics.items():
        rules_of_metric.setdefault(spec.id, []).append(rule_id)
    checks: Dict[Tuple[str, Optional[str]], List[Check]] = {}
    for check in verdict.checks:
        checks.setdefault((check.id, check.gpu_uuid), []).append(check)
    found = HostValues(host)
    for probe, measurements in sorted(measurements_of.items()):
        envelope = envelopes.get(probe)
        data = envelope.get("data") if isinstance(envelope, Mapping) else None
        if not isinstance(data, dict):
            continue
        used = False
        for measurement in measurements(data):
            rule_ids = rules_of_metric.get(measurement.metric_id)
            if not rule_ids or measurement.device.kind != "cuda" or measurement.device.uuid is None:
                continue
            why = _why_not_counted(measurement, _checks_of(checks, rule_ids, measurement.device.uuid), rule_ids)
            if why:
                found.left_out.setdefault(measurement.metric_id, []).append("%s: %s" % (measurement.device.label(), why))
                continue
            value = statistics.median(measurement.samples) if measurement.samples else float(measurement.value)
            conditions = tuple((condition.key, float(condition.value)) for condition in measurement.conditions
                               if isinstance(condition.value, (int, float)))
            found.gpus.setdefault(measurement.metric_id, []).append(GpuValue(measurement.device.uuid, float(value), conditions))
            used = True
        if used:
            found.dates.extend(_dates(envelope))
    found.drivers = sorted({driver for envelope in envelopes.values() for driver in _drivers(envelope)})
    return found


def _checks_of(checks: Mapping[Tuple[str, Optional[str]], List[Check]], rule_ids: Iterable[str], uuid: str) -> List[Check]:
    return [check for rule_id in rule_ids for check in checks.get((rule_id, uuid), [])]


def _why_not_counted(measurement: Any, checks: Sequence[Check], rule_ids: Sequence[str]) -> str:
    if measurement.missing is not None:
        return "not measured: %s" % measurement.missing.reason
    if measurement.value is None:
        return "no value in the result"
    if not checks:
        return "rule %s made no check of it on this host (disabled?)" % ", ".join(rule_ids)
    uncompared = [check for check in checks if not compared(check)]
    if uncompared:
        return "check %s is %s: %s" % (uncompared[0].id, uncompared[0].status, uncompared[0].reason)
    return ""


def _dates(envelope: Mapping[str, Any]) -> List[str]:
    started = envelope.get("started")
    return [started[:10]] if isinstance(started, str) and len(started) >= 10 else []


def _drivers(envelope: Any) -> List[str]:
    environment = envelope.get("environment") if isinstance(envelope, Mapping) else None
    driver = environment.get("driver_version") if isinstance(environment, Mapping) else None
    return [driver] if isinstance(driver, str) and driver else []
