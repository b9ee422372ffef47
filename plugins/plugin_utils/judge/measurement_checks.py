# -*- coding: utf-8 -*-
# Copyright: gpufleet.validation contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Checks of the measurement probes (membw, gemm, hostbw): a measured rate against the SKU's known-good value."""
from __future__ import annotations

import statistics
from typing import Any, Callable, Dict, Iterable, List, Optional, Tuple

from .check_helpers import gpu_label, make_check, param_source
from .model import Check
from .repeats import decide, describe_repeats, finite
from .sku import is_unavailable

# (device entry of the probe's data, measured value or an unavailable field, what was measured in words[, repeats]):
# with repeats (a list of the measured values) the decision is their median (judge/repeats.py).
Measurement = Tuple[Any, ...]


def _reference(context: Any, section: str, key: Optional[str]) -> Tuple[Optional[float], str]:
    baseline = getattr(context, "baseline", None) or {}
    entry = (baseline.get(section) or {}).get(key) if key else None
    if isinstance(entry, dict) and isinstance(entry.get("value"), (int, float)):
        return float(entry["value"]), "%s (%s)" % (context.baseline_source("%s.%s" % (section, key)), entry.get("source", ""))
    return None, ""


def reference_entry(context: Any, key: Optional[str]) -> Dict[str, Any]:
    """The baseline's known_good entry (value, unit, source, method, power_limit_w, measured ...), or {}."""
    baseline = getattr(context, "baseline", None) or {}
    entry = (baseline.get("known_good") or {}).get(key) if key else None
    return entry if isinstance(entry, dict) else {}


def _gpu_of(device: Dict[str, Any]) -> Dict[str, Any]:
    return {"index": device.get("index"), "uuid": device.get("uuid") if isinstance(device.get("uuid"), str) else None}


def judge_against_baseline(host: str, rule: Dict[str, Any], context: Any, measurements: Iterable[Measurement],
                           unit: str) -> List[Check]:
    """Each measurement against params.known_good (a baseline known_good key), with params.datasheet for the percent.

    Below fail_below_pct % of known-good fails, below warn_below_pct % warns, decided on the median of the repeats
    where the measurement has them (repeats straddling the fail threshold: warn, unstable). No baseline value (unknown
    SKU): skip, and the fleet comparison is what remains. A CPU device (the probe's CPU path) is skipped.
    """
    params = rule.get("params", {})
    known_good, known_source = _reference(context, "known_good", params.get("known_good"))
    datasheet, unused_datasheet_source = _reference(context, "datasheet", params.get("datasheet"))
    fail_pct, warn_pct = float(params.get("fail_below_pct", 85)), float(params.get("warn_below_pct", 95))
    checks = []
    for measurement in measurements:
        device, value, what = measurement[:3]
        samples = finite(measurement[3]) if len(measurement) > 3 else []
        gpu = _gpu_of(device)
        label = (gpu_label(gpu) if gpu["index"] is not None else "the host's GPUs") if device.get("kind") == "cuda" else "the CPU"
        if device.get("kind") != "cuda":
            checks.append(make_check(rule, host, "skip", "%s: %s was measured on the CPU (no GPU), so there is no GPU "
                                     "value to judge" % (label, what), gpu))
            continue
        if is_unavailable(value):
            checks.append(make_check(rule, host, "error", "%s: %s was not measured: %s" % (label, what, value["unavailable"]), gpu))
            continue
        if not isinstance(value, (int, float)):
            continue
        repeated = bool(samples)
        if not samples:
            samples = [float(value)]
        if known_good is None:
            median = statistics.median(samples)
            of_datasheet = " (%.0f %% of the datasheet's %g %s)" % (100.0 * median / datasheet, datasheet, unit) if datasheet else ""
            checks.append(make_check(rule, host, "skip", "%s: %s %.1f %s%s; no known-good value for SKU %s, so it is "
                                     "compared with its peers only" % (label, what, median, unit, of_datasheet, context.sku or "unknown"),
                                     gpu, value=round(median, 3), unit=unit))
            continue
        decision = decide(samples, known_good * fail_pct / 100.0, known_good * warn_pct / 100.0, repeated)
        of_datasheet = " (%.0f %% of the datasheet's %g %s)" % (100.0 * decision.value / datasheet, datasheet, unit) if datasheet else ""
        percent = 100.0 * decision.value / known_good
        words = "%s: %s %.1f %s, %.0f %% of the known-good %g %s%s; %s" % (
            label, what, decision.value, unit, percent, known_good, unit, of_datasheet, describe_repeats(decision, unit))
        if decision.note:
            words += "; " + decision.note
        elif decision.status != "pass":
            words += "; below %g %% %s" % (warn_pct if decision.status == "warn" else fail_pct,
                                           "warns" if decision.status == "warn" else "fails")
        checks.append(make_check(rule, host, decision.status, words, gpu, value=round(decision.value, 3),
                                 unit=unit, reference=known_good, reference_source=known_source,
                                 threshold=">= %g %% of known-good (warn below %g %%), median of repeats; %s" % (
                                     fail_pct, warn_pct, param_source(rule, "fail_below_pct"))))
    return checks


def _devices(data: Dict[str, Any]) -> List[Dict[str, Any]]:
    devices = data.get("devices")
    return [device for device in devices if isinstance(device, dict)] if isinstance(devices, list) else []


# ------------------------------------------------------------------------------------------------- membw


def _device_of(entry: Dict[str, Any]) -> Dict[str, Any]:
    device = entry.get("device") if isinstance(entry.get("device"), dict) else {}
    return dict(device, error=entry.get("error")) if entry.get("error") else device


def membw_headline(host: str, data: Dict[str, Any], rule: Dict[str, Any], context: Any) -> List[Check]:
    measurements = []
    for entry in _devices(data):
        headline = entry.get("headline") if isinstance(entry.get("headline"), dict) else {}
        value = headline.get("bandwidth_gbps")
        if value is None or entry.get("error"):
            value = {"unavailable": entry.get("error") or "no headline bandwidth"}
        source = headline.get("source", "")
        what = {"plateau": "the copy bandwidth plateau (read + written)",
                "largest_size_no_plateau": "the largest size's copy bandwidth (no plateau was found)",
                "quick_largest_size": "the copy bandwidth at the largest size (quick run, no sweep)"}.get(source, "the copy bandwidth")
        repeats = entry.get("repeats") if isinstance(entry.get("repeats"), dict) else {}
        samples = finite(repeats.get("bandwidths_gbps"))
        if samples and isinstance(value, (int, float)):
            what = "the copy bandwidth (read + written) at %s MiB, repeated (%s %.1f GB/s)" % (
                repeats.get("size_mib"), "plateau" if source == "plateau" else "headline", value)
        measurements.append((_device_of(entry), value, what, samples))
    return judge_against_baseline(host, rule, context, measurements, "GB/s")


def membw_repeat_cv(host: str, data: Dict[str, Any], rule: Dict[str, Any], context: Any) -> List[Check]:
    limit = float(rule.get("params", {}).get("max_cv_pct", 5.0))
    checks = []
    for entry in _devices(data):
        repeats = entry.get("repeats") if isinstance(entry.get("repeats"), dict) else {}
        device = _device_of(entry)
        gpu = _gpu_of(device)
        cv = repeats.get("cv_pct")
        if not isinstance(cv, (int, float)):
            continue
        if device.get("kind") != "cuda":
            checks.append(make_check(rule, host, "skip", "the CPU's copy repeats vary by %.2f %%: the CPU path is not a GPU "
                                     "measurement, so its noise is not judged" % cv))
            continue
        label = gpu_label(gpu)
        status = "pass" if cv <= limit else "warn"
        count = len(finite(repeats.get("bandwidths_gbps")))
        words = "%s: the %s MiB copy %s varies by %.2f %% (coefficient of variation)" % (
            label, repeats.get("size_mib"), "repeated %d times" % count if count else "repeated", cv)
        if status == "warn":
            words += "; above %g %%: diagnose (clocks, other processes, thermals in the snapshot) before trusting the number" % limit
        checks.append(make_check(rule, host, status, words, gpu if device.get("kind") == "cuda" else None, value=round(cv, 3),
                                 unit="%", reference=limit, reference_source=param_source(rule, "max_cv_pct"),
                                 threshold="<= %g %%" % limit))
    return checks


MEMBW_CHECKS: Dict[str, Callable[..., List[Check]]] = {
    "headline_bandwidth": membw_headline,
    "repeat_cv": membw_repeat_cv,
}


# -------------------------------------------------------------------------------------------------- gemm


# A GPU whose power limit is more than this far below the reference's ran under another configuration: its sustained
# rate is not compared (health.power_limit reports the limit itself).
POWER_LIMIT_TOLERANCE = 0.01
STATE_WORDS = {"burst": "burst (from idle, before the power cap)", "sustained": "sustained (steady state at the power limit)"}


def _state_of(rate: Dict[str, Any], method: str) -> Tuple[Any, str]:
    """(the dtype's burst or sustained record, or an unavailable field; "skip" or "error" for an unavailable one)."""
    states = rate.get("power_states")
    if states is None:
        return ({"unavailable": "this gemm result has no burst or sustained timing (written by a gemm probe older than the "
                                "two named states); run the gemm probe again"}, "skip")
    if is_unavailable(states):
        return states, "error" if "failed" in states["unavailable"] else "skip"
    state = states.get(method, {"unavailable": "no %s timing in the result" % method})
    if is_unavailable(state):
        return state, "error"
    return state, ""


def _not_comparable(state: Dict[str, Any], reference: Dict[str, Any]) -> Optional[str]:
    measured, wanted = state.get("power_limit_w"), reference.get("power_limit_w")
    if isinstance(measured, (int, float)) and isinstance(wanted, (int, float)) and measured < wanted * (1 - POWER_LIMIT_TOLERANCE):
        return ("its sustained rate was measured at a %g W power limit and the known-good at %g W, so the two are not "
                "compared: the lowered limit is a configuration finding (health.power_limit), not a slow GPU" % (measured, wanted))
    return None


def gemm_state_rate(dtype: str, method: str) -> Callable[..., List[Check]]:
    """The calibration shape's rate in one named state (burst or sustained), median of its repeats, against the SKU's
    known-good of the same method."""
    def check(host: str, data: Dict[str, Any], rule: Dict[str, Any], context: Any) -> List[Check]:
        reference = reference_entry(context, rule.get("params", {}).get("known_good"))
        measurements: List[Measurement] = []
        checks: List[Check] = []
        for entry in _devices(data):
            device = _device_of(entry)
            gpu = _gpu_of(device)
            what = "the %s %s matmul rate" % (dtype, STATE_WORDS[method])
            rates = entry.get("dtypes") if isinstance(entry.get("dtypes"), dict) else {}
            if device.get("kind") != "cuda":
                measurements.append((device, None, what))
                continue
            if entry.get("error") or not rates:
                measurements.append((device, {"unavailable": entry.get("error") or "no dtype was measured"}, what))
                continue
            rate = rates.get(dtype)
            if not isinstance(rate, dict):
                continue
            if is_unavailable(rate):
                checks.append(make_check(rule, host, "skip", "%s: %s matmul is not offered here: %s"
                                         % (gpu_label(gpu), dtype, rate["unavailable"]), gpu))
                continue
            state, status = _state_of(rate, method)
            if status:
                checks.append(make_check(rule, host, status, "%s: %s was not measured: %s" % (gpu_label(gpu), what, state["unavailable"]), gpu))
                continue
            case = (rate.get("power_states") or {}).get("case", "?")
            why_not = _not_comparable(state, reference) if method == "sustained" else None
            if why_not:
                checks.append(make_check(rule, host, "skip", "%s: %s %.1f TFLOP/s; %s" % (gpu_label(gpu), what, state["tflops"], why_not),
                                         gpu, value=state["tflops"], unit="TFLOP/s", reference=reference.get("power_limit_w"),
                                         reference_source="known-good power_limit_w", threshold="same power limit as the reference"))
                continue
            what = "%s on %s" % (what, case)
            if method == "burst" and state.get("power_cap_reached"):
                what += " (%s)" % state.get("note", "the power cap engaged inside a burst window")
            measurements.append((device, state.get("tflops"), what, state.get("repeats_tflops")))
        return checks + judge_against_baseline(host, rule, context, measurements, "TFLOP/s")
    return check


GEMM_CHECKS: Dict[str, Callable[..., List[Check]]] = {
    "bf16_burst": gemm_state_rate("bf16", "burst"),
    "bf16_sustained": gemm_state_rate("bf16", "sustained"),
    "fp8_burst": gemm_state_rate("fp8_e4m3", "burst"),
    "fp8_sustained": gemm_state_rate("fp8_e4m3", "sustained"),
}


# ------------------------------------------------------------------------------------------------ hostbw


def hostbw_measurements(data: Dict[str, Any], direction: str, host_memory: str) -> List[Measurement]:
    measurements = []
    for device in _devices(data):
        if "error" in device and "results" not in device:
            measurements.append((device, {"unavailable": "the device failed: %s" % device["error"]}, "%s %s" % (host_memory, direction)))
            continue
        for result in device.get("results") or []:
            if result.get("direction") == direction and result.get("host_memory") == host_memory:
                value = result.get("median_gbps", {"unavailable": result.get("error", "no median")})
                measurements.append((device, value, "%s %s copy" % (host_memory, direction.upper()), result.get("repeats_gbps")))
    return measurements


def hostbw_pinned(direction: str) -> Callable[..., List[Check]]:
    def check(host: str, data: Dict[str, Any], rule: Dict[str, Any], context: Any) -> List[Check]:
        measurements = hostbw_measurements(data, direction, "pinned")
        if not measurements and _devices(data) and all(device.get("kind") == "cpu" for device in _devices(data)):
            measurements = [(device, None, "pinned %s copy" % direction.upper()) for device in _devices(data)]
        return judge_against_baseline(host, rule, context, measurements, "GB/s")
    return check


HOSTBW_CHECKS: Dict[str, Callable[..., List[Check]]] = {
    "pinned_h2d": hostbw_pinned("h2d"),
    "pinned_d2h": hostbw_pinned("d2h"),
}
