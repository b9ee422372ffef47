# -*- coding: utf-8 -*-
# Copyright: gpufleet.validation contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""One check for every measured rate: each measurement of a metric against the SKU's known-good value.

A probe's judging maps a rule's check name to against_known_good(its metric's catalogue entry, its measurements
reader); the check knows no probe's data layout, only judge/measurement.py's records.
"""
from __future__ import annotations

import statistics
from typing import Any, Dict, Iterable, List, Mapping, NamedTuple, Optional, Tuple

from ..metric_spec import MetricSpec
from ..report.number_format import format_quantity
from ..result_fields import is_unavailable
from .baseline_origin import baseline_file
from .check_helpers import make_check, param_source, reads_params
from .datasheet_floors import is_floor
from .measurement import Device, Measurement, MeasurementsFunction, measured, not_measured
from .model import Check
from .not_compared import NO_KNOWN_GOOD, peers_only_source, why_no_baseline
from .repeats import decide, describe_repeats, finite

# The thresholds every rule judged through judge_measurements holds (its probe's rules.yaml): fail and warn below a % of the
# known-good value.
BASELINE_THRESHOLDS = ("fail_below_pct", "warn_below_pct")
# The action of a decision the repeats leave open (judge/repeats.py: unstable, or too few repeats to fail).
UNDECIDED_ACTION = "rerun"


def _reference(context: Any, section: str, key: Optional[str]) -> Tuple[Optional[float], str]:
    baseline = getattr(context, "baseline", None) or {}
    entry = (baseline.get(section) or {}).get(key) if key else None
    if isinstance(entry, dict) and isinstance(entry.get("value"), (int, float)):
        return float(entry["value"]), "%s (%s)" % (context.baseline_source("%s.%s" % (section, key)), entry.get("source", ""))
    return None, ""


def _unit_mismatch(context: Any, section: str, key: Optional[str], unit: str) -> Optional[str]:
    """Why the baseline's section.key cannot be compared with a measurement in unit (a number of another quantity,
    e.g. a known-good copy rate stated in TFLOP/s), or None. The loader has converted every unit it takes to its
    quantity's judged unit, so a different unit here is a different quantity."""
    baseline = getattr(context, "baseline", None) or {}
    entry = (baseline.get(section) or {}).get(key) if key else None
    stated = entry.get("unit") if isinstance(entry, dict) else None
    if stated is None or stated == unit:
        return None
    return ("the baseline's %s.%s is in %s, a unit of another quantity than this measurement's %s; fix %s"
            % (section, key, stated, unit, context.baseline_source("%s.%s" % (section, key))))


def _why_no_known_good(context: Any, key: Optional[str]) -> str:
    """" (baselines/x.yaml has no known_good.k)" for a known SKU; " (no usable baseline (<why>))" for an unknown one."""
    baseline = getattr(context, "baseline", None)
    if baseline:
        return " (%s has no known_good.%s)" % (baseline_file(baseline), key)
    reason, problems = getattr(context, "sku_reason", ""), getattr(context, "baseline_problems", ())
    return " (%s)" % why_no_baseline(reason, problems) if reason or problems else ""


def reference_entry(context: Any, key: Optional[str]) -> Dict[str, Any]:
    """The baseline's known_good entry (value, unit, source, method, power_limit_w, measured ...), or {}."""
    baseline = getattr(context, "baseline", None) or {}
    entry = (baseline.get("known_good") or {}).get(key) if key else None
    return entry if isinstance(entry, dict) else {}


def _of_datasheet(value: float, datasheet: Optional[float], unit: str) -> str:
    """" (94.6 % of the datasheet's 4800 GB/s)", or "" without a datasheet value."""
    if not datasheet:
        return ""
    return " (%s of the datasheet's %s)" % (format_quantity(100.0 * value / datasheet, "%"), format_quantity(datasheet, unit))


def _listed_first(measurement: Measurement, reference: Mapping[str, Any]) -> bool:
    """A GPU's finding that precedes the compared values: a missing value marked so, or a condition the reference lacks."""
    if measurement.device.kind != "cuda":
        return False
    if measurement.missing is not None:
        return measurement.missing.listed_first
    return measurement.value is not None and any(condition.lower_than(reference) is not None for condition in measurement.conditions)


def _first_finding(host: str, rule: Dict[str, Any], measurement: Measurement, reference: Mapping[str, Any]) -> Check:
    device = measurement.device
    if measurement.missing is not None:
        return make_check(rule, host, measurement.missing.status, "%s: %s" % (device.label(), measurement.missing.sentence), device.gpu)
    condition = next(condition for condition in measurement.conditions if condition.lower_than(reference) is not None)
    wanted = condition.lower_than(reference)
    words = condition.lower_words % {"measured": condition.value, "reference": wanted}
    measured = format_quantity(measurement.value, measurement.unit)
    return make_check(rule, host, "skip", "%s: %s %s; %s" % (device.label(), measurement.what, measured, words),
                      device.gpu, value=measurement.value, unit=measurement.unit, reference=wanted,
                      reference_source="known-good %s" % condition.key, threshold="same %s as the reference" % condition.name)


def judge_measurements(host: str, rule: Dict[str, Any], context: Any, measurements: Iterable[Measurement]) -> List[Check]:
    """Each measurement against params.known_good (a baseline known_good key), with params.datasheet for the percent.

    Below fail_below_pct % of known-good fails, below warn_below_pct % warns, decided on the median of the repeats
    where the measurement has them (repeats straddling the fail threshold: warn, unstable). No baseline value (unknown
    SKU): skip, and the fleet comparison is what remains. A CPU device (the probe's CPU path) is skipped; a missing
    value is its own skip or error; a condition lower than the known-good entry's (a lowered power limit) is a skip.
    The GPU findings marked to come first (Missing.listed_first, a condition not shared) are listed before the rest.
    """
    params = rule.get("params", {})
    known_good, known_source = _reference(context, "known_good", params.get("known_good"))
    datasheet, unused_datasheet_source = _reference(context, "datasheet", params.get("datasheet"))
    references = _References(known_good, known_source, datasheet, reference_entry(context, params.get("known_good")),
                             float(params["fail_below_pct"]), float(params["warn_below_pct"]))
    measurements = list(measurements)
    checks = [_first_finding(host, rule, measurement, references.entry) for measurement in measurements
              if _listed_first(measurement, references.entry)]
    for measurement in measurements:
        if not _listed_first(measurement, references.entry):
            check = _measurement_check(host, rule, context, measurement, references)
            if check is not None:
                checks.append(check)
    return checks


class _References(NamedTuple):
    """What a rule holds each measurement against: its known-good value and where it came from, the datasheet's value,
    the known-good entry, and the rule's thresholds (percent of known-good)."""

    known_good: Optional[float]
    known_source: str
    datasheet: Optional[float]
    entry: Any
    fail_pct: float
    warn_pct: float


def _measurement_check(host: str, rule: Dict[str, Any], context: Any, measurement: Measurement,
                       references: _References) -> Optional[Check]:
    """One measurement's check (None for a measurement with no value and nothing to say of it)."""
    params = rule.get("params", {})
    device, what, unit, value = measurement.device, measurement.what, measurement.unit, measurement.value
    label, gpu = device.label(), device.gpu
    if device.kind != "cuda":
        return make_check(rule, host, "skip", "%s: %s was measured on the CPU (no GPU), so there is no GPU "
                          "value to judge" % (label, what), gpu)
    if measurement.missing is not None:
        return make_check(rule, host, measurement.missing.status, "%s: %s" % (label, measurement.missing.sentence), gpu)
    if value is None:
        return None
    what += measurement.detail
    samples = list(measurement.samples)
    repeated = bool(samples)
    if not samples:
        samples = [float(value)]
    mismatch = _unit_mismatch(context, "known_good", params.get("known_good"), unit)
    if mismatch:
        return make_check(rule, host, "warn", "%s: %s %s not compared: %s" % (
            label, what, format_quantity(statistics.median(samples), unit), mismatch), gpu, unit=unit)
    if references.known_good is None:
        median = statistics.median(samples)
        of_datasheet = _of_datasheet(median, references.datasheet, unit)
        return make_check(rule, host, "skip", "%s: %s %s%s%s for SKU %s%s, so it is "
                          "compared with its peers only" % (label, what, format_quantity(median, unit), of_datasheet,
                                                            NO_KNOWN_GOOD, context.sku or "unknown",
                                                            _why_no_known_good(context, params.get("known_good"))),
                          gpu, value=round(median, 3), unit=unit, reference_source=peers_only_source(measurement.metric_id))
    return _known_good_check(host, rule, "%s: %s" % (label, what), gpu, unit, samples, repeated, references)


def _known_good_check(host: str, rule: Dict[str, Any], what: str, gpu: Any, unit: str, samples: List[float], repeated: bool,
                      references: _References) -> Check:
    """A measurement (what: its GPU's label and what it is) held against its known-good value."""
    known_good, known_source, datasheet, entry, fail_pct, warn_pct = references
    decision = decide(samples, known_good * fail_pct / 100.0, known_good * warn_pct / 100.0, repeated)
    of_datasheet = _of_datasheet(decision.value, datasheet, unit)
    percent = 100.0 * decision.value / known_good
    reference_words = "datasheet floor" if is_floor(entry) else "known-good"
    words = "%s %s, %s of the %s %s%s; %s" % (
        what, format_quantity(decision.value, unit), format_quantity(percent, "%"), reference_words,
        format_quantity(known_good, unit), of_datasheet, describe_repeats(decision, unit))
    if decision.note:
        words += "; " + decision.note
    elif decision.status != "pass":
        words += "; below %g %% %s" % (warn_pct if decision.status == "warn" else fail_pct,
                                       "warns" if decision.status == "warn" else "fails")
    check = make_check(rule, host, decision.status, words, gpu, value=round(decision.value, 3),
                       unit=unit, reference=known_good, reference_source=known_source,
                       threshold=">= %g %% of %s (warn below %g %%), median of repeats; %s" % (
                           fail_pct, reference_words, warn_pct, param_source(rule, "fail_below_pct")))
    if decision.note:
        # undecided, not slow: the rule's action (a drain for a slow GPU) does not fit; measuring again does
        check.action, check.remedy = UNDECIDED_ACTION, "Measure again on a quiet GPU (%s)." % decision.note.split(":", 1)[0]
    return check


def against_known_good(metric: MetricSpec, measurements: MeasurementsFunction):
    """The check function of a rule that holds the probe's measurements of the metric against its known-good value: the
    baseline entry the rule's params.known_good names (its probe's rules.yaml states the catalogue's key and
    tests/unit/test_metric_catalogue.py pins the two equal; a host's rule override may name another), else the one the
    metric's catalogue entry names (MetricSpec.baseline_key)."""
    def check(host: str, data: Dict[str, Any], rule: Dict[str, Any], context: Any) -> List[Check]:
        params = rule.get("params") or {}
        if params.get("known_good") is None and metric.baseline_key is not None:
            rule = dict(rule, params=dict(params, known_good=metric.baseline_key))
        return judge_measurements(host, rule, context, (found for found in measurements(data) if found.metric_id == metric.id))
    check.__doc__ = "Each %s against the rule's known-good value (judge/baseline_checks.py)." % metric.id
    return reads_params(*BASELINE_THRESHOLDS)(check)


def judge_against_baseline(host: str, rule: Dict[str, Any], context: Any, measurements: Iterable[Tuple[Any, ...]],
                           unit: str) -> List[Check]:
    """judge_measurements for (device record, value or an unavailable field, what was measured[, repeats]) tuples: the
    interconnect checks (p2p link classes, collective busbw) build those from their own data."""
    records = []
    for item in measurements:
        device, value, what = item[:3]
        records.append(Measurement("", unit, "higher", Device.of(device), what, value=measured(value),
                                   missing=not_measured(what, value["unavailable"]) if is_unavailable(value) else None,
                                   samples=tuple(finite(item[3])) if len(item) > 3 else ()))
    return judge_measurements(host, rule, context, records)
