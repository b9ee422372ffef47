# -*- coding: utf-8 -*-
# Copyright: gpufleet.validation contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Checks of the measurement probes (membw, gemm, hostbw): a measured rate against the SKU's known-good value."""
from __future__ import annotations

from typing import Any, Callable, Dict, Iterable, List, Optional, Tuple

from .health_checks import gpu_label, make_check, param_source
from .model import Check
from .sku import is_unavailable

# (device entry of the probe's data, measured value or an unavailable field, what was measured in words)
Measurement = Tuple[Dict[str, Any], Any, str]


def _reference(context: Any, section: str, key: Optional[str]) -> Tuple[Optional[float], str]:
    baseline = getattr(context, "baseline", None) or {}
    entry = (baseline.get(section) or {}).get(key) if key else None
    if isinstance(entry, dict) and isinstance(entry.get("value"), (int, float)):
        return float(entry["value"]), "%s (%s)" % (context.baseline_source("%s.%s" % (section, key)), entry.get("source", ""))
    return None, ""


def judge_against_baseline(host: str, rule: Dict[str, Any], context: Any, measurements: Iterable[Measurement],
                           unit: str) -> List[Check]:
    """Each measurement against params.known_good (a baseline known_good key), with params.datasheet for the percent.

    Below fail_below_pct % of known-good fails, below warn_below_pct % warns. No baseline value (unknown SKU):
    skip, and the fleet comparison is what remains. A CPU device (the probe's CPU path) is skipped.
    """
    params = rule.get("params", {})
    known_good, known_source = _reference(context, "known_good", params.get("known_good"))
    datasheet, unused_datasheet_source = _reference(context, "datasheet", params.get("datasheet"))
    fail_pct, warn_pct = float(params.get("fail_below_pct", 85)), float(params.get("warn_below_pct", 95))
    checks = []
    for device, value, what in measurements:
        gpu = {"index": device.get("index"), "uuid": device.get("uuid") if isinstance(device.get("uuid"), str) else None}
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
        of_datasheet = " (%.0f %% of the datasheet's %g %s)" % (100.0 * value / datasheet, datasheet, unit) if datasheet else ""
        if known_good is None:
            checks.append(make_check(rule, host, "skip", "%s: %s %.1f %s%s; no known-good value for SKU %s, so it is "
                                     "compared with its peers only" % (label, what, value, unit, of_datasheet, context.sku or "unknown"),
                                     gpu, value=value, unit=unit))
            continue
        percent = 100.0 * value / known_good
        status = "pass" if percent >= warn_pct else ("warn" if percent >= fail_pct else "fail")
        words = "%s: %s %.1f %s, %.0f %% of the known-good %g %s%s" % (label, what, value, unit, percent, known_good, unit, of_datasheet)
        if status != "pass":
            words += "; below %g %% %s" % (warn_pct if status == "warn" else fail_pct, "warns" if status == "warn" else "fails")
        checks.append(make_check(rule, host, status, words, gpu, value=round(value, 3),
                                 unit=unit, reference=known_good, reference_source=known_source,
                                 threshold=">= %g %% of known-good (warn below %g %%); %s" % (
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
        measurements.append((_device_of(entry), value, what))
    return judge_against_baseline(host, rule, context, measurements, "GB/s")


def membw_repeat_cv(host: str, data: Dict[str, Any], rule: Dict[str, Any], context: Any) -> List[Check]:
    limit = float(rule.get("params", {}).get("max_cv_pct", 5.0))
    checks = []
    for entry in _devices(data):
        repeats = entry.get("repeats") if isinstance(entry.get("repeats"), dict) else {}
        device = _device_of(entry)
        gpu = {"index": device.get("index"), "uuid": device.get("uuid") if isinstance(device.get("uuid"), str) else None}
        cv = repeats.get("cv_pct")
        if not isinstance(cv, (int, float)):
            continue
        label = gpu_label(gpu) if device.get("kind") == "cuda" else "the CPU"
        status = "pass" if cv <= limit else "warn"
        words = "%s: the %s MiB copy repeated 3 times varies by %.2f %% (coefficient of variation)" % (label, repeats.get("size_mib"), cv)
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


def gemm_best_rate(dtype: str) -> Callable[..., List[Check]]:
    """The best dense rate of a dtype over the probe's shapes (the "maximum achievable" figure known-good values quote)."""
    def check(host: str, data: Dict[str, Any], rule: Dict[str, Any], context: Any) -> List[Check]:
        measurements, skipped = [], []
        for entry in _devices(data):
            device = _device_of(entry)
            rates = entry.get("dtypes") if isinstance(entry.get("dtypes"), dict) else {}
            if entry.get("error") or dtype not in rates:
                if not entry.get("error") and rates:
                    continue
                measurements.append((device, {"unavailable": entry.get("error") or "no %s result" % dtype}, "%s matmul" % dtype))
                continue
            rate = rates[dtype]
            if is_unavailable(rate):
                gpu = {"index": device.get("index"), "uuid": device.get("uuid") if isinstance(device.get("uuid"), str) else None}
                skipped.append(make_check(rule, host, "skip", "%s: %s matmul is not offered here: %s"
                                          % (gpu_label(gpu), dtype, rate["unavailable"]), gpu))
                continue
            best = rate.get("best") if isinstance(rate.get("best"), dict) else {}
            value = best.get("tflops", {"unavailable": "no %s shape was measured" % dtype})
            measurements.append((device, value, "the best %s matmul (%s)" % (dtype, best.get("case", "?"))))
        return skipped + judge_against_baseline(host, rule, context, measurements, "TFLOP/s")
    return check


GEMM_CHECKS: Dict[str, Callable[..., List[Check]]] = {
    "best_bf16": gemm_best_rate("bf16"),
    "best_fp8": gemm_best_rate("fp8_e4m3"),
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
                measurements.append((device, value, "%s %s copy" % (host_memory, direction.upper())))
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
