"""membw: device memory bandwidth, a copy swept over sizes to its plateau."""
from __future__ import annotations

from typing import Any, Dict, List, Tuple

from ...probe_kit.kit import (
    Device, Measurement, measured, not_measured, finite, format_quantity, error_words, is_unavailable, ProbeJudging)
from .checks import membw_repeat_cv
from .metrics import BANDWIDTH
from .together_checks import membw_together_bandwidth

# How a repeated headline says which size it was repeated at.
REPEATED_AT = {"plateau": "plateau", "largest_size_no_plateau": "largest size, no plateau was found",
               "quick_largest_size": "largest size, quick run, no sweep"}
HEADLINE_WORDS = {"plateau": "the copy bandwidth plateau (read + written)",
                  "largest_size_no_plateau": "the largest size's copy bandwidth (no plateau was found)",
                  "quick_largest_size": "the copy bandwidth at the largest size (quick run, no sweep)"}


def membw_measurements(data: Dict[str, Any]) -> List[Measurement]:
    """The headline copy bandwidth of each device (metrics.BANDWIDTH), with the repeats at the largest size."""
    found = []
    devices = data.get("devices") if isinstance(data, dict) else None
    for entry in devices if isinstance(devices, list) else []:
        if not isinstance(entry, dict):
            continue
        headline = entry.get("headline") if isinstance(entry.get("headline"), dict) else {}
        repeats = entry.get("repeats") if isinstance(entry.get("repeats"), dict) else {}
        raw, source = headline.get("bandwidth_gbps"), headline.get("source", "")
        value, samples = measured(raw), tuple(finite(repeats.get("bandwidths_gbps")))
        what = HEADLINE_WORDS.get(source, "the copy bandwidth")
        missing = None
        if raw is None or entry.get("error"):
            missing = not_measured(what, error_words(entry.get("error")) or "no headline bandwidth")
        elif is_unavailable(raw):
            missing = not_measured(what, raw["unavailable"])
        elif samples and value is not None:
            what = "the copy bandwidth (read + written) at %s MiB, repeated (%s %s)" % (
                repeats.get("size_mib"), REPEATED_AT.get(source, "headline"), format_quantity(value, BANDWIDTH.unit))
        found.append(Measurement.of(BANDWIDTH, Device.of(entry.get("device")), what, value=value, missing=missing, samples=samples))
    return found


def membw_headlines(membw_data: Any) -> Tuple[Dict[str, float], List[str]]:
    """({GPU UUID, or "cpu": membw's headline bandwidth}, why each device without one has none)."""
    found, missing = {}, []
    for measurement in membw_measurements(membw_data) if isinstance(membw_data, dict) else []:
        key = measurement.device.uuid if measurement.device.kind == "cuda" else "cpu"
        if not isinstance(key, str):
            continue
        if measurement.value is not None:
            found[key] = float(measurement.value)
        else:
            missing.append("%s: %s" % (key, measurement.missing.reason if measurement.missing else "no value"))
    return found, missing


def headline_sources(membw_data: Dict[str, Any]) -> List[str]:
    """Where membw's headlines came from (plateau, quick_largest_size, largest_size_no_plateau), once each."""
    sources = []
    for entry in membw_data.get("devices") or []:
        source = (entry.get("headline") or {}).get("source") if isinstance(entry, dict) else None
        if isinstance(source, str) and source not in sources:
            sources.append(source)
    return sources


def membw_given(membw_data: Dict[str, Any]) -> Dict[str, Any]:
    """What membw's measured result gives a probe that needs it (run.py's gives=: gemm's roofline, fusion's plateau):
    bandwidth_gbps {GPU UUID, or "cpu": the headline}, missing (why each device without one has none), sources (where
    the headlines came from)."""
    bandwidths, missing = membw_headlines(membw_data)
    return {"bandwidth_gbps": bandwidths, "missing": missing, "sources": headline_sources(membw_data)}


JUDGING = ProbeJudging(
    checks={"repeat_cv": membw_repeat_cv, "together_bandwidth": membw_together_bandwidth},
    measurements=membw_measurements,
    baseline_checks={"headline_bandwidth": BANDWIDTH},
    busy_distorts=frozenset({"repeat_cv", "together_bandwidth"}),
)
