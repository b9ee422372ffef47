"""Burst and sustained, as numbers (no torch, no NVML): which NVML samples fall inside a timed window, what they say
about the GPU's state there, and the summary of a method's repeats.

A sample row is the load sampler's: [t_s, sm_clock_mhz, mem_clock_mhz, power_w, temperature_c, reasons_mask,
gpu_util_pct], t_s on the same monotonic clock as the windows; a value NVML could not read is None.
"""
from __future__ import annotations

import statistics
from typing import Any, Dict, List, Optional, Sequence

from probe_packages.gemm.records import significant
from probelib.fields import is_number, unavailable
from probelib.nvml.clock_event_reasons import decode_clock_event_reasons

GPU_IDLE_BIT = 0x0001
SW_POWER_CAP_BIT = 0x0004
T, SM_CLOCK, MEM_CLOCK, POWER, TEMPERATURE, REASONS, UTILIZATION = range(7)

METHODS = {
    "burst": ("from an idle GPU, a short timed window that ends before the software power cap engages (how the published "
              "'maximum achievable' matmul figures are taken); NVML sampled inside the window"),
    "sustained": ("after the GPU has run the same product for a settling time, back-to-back timed windows at steady state "
                  "(at the power limit where the GPU reaches it); NVML sampled through every window"),
}


def is_idle(row: Sequence[Any], power_limit_w: Optional[float], idle_power_fraction: float) -> bool:
    """The GPU draws at most ``idle_power_fraction`` of its power limit (NVML's power is an average that lags a load, so
    this also waits for the power controller's history to cool); without a power reading, NVML's gpu_idle reason.

    Not the gpu_idle reason where power is known: on the H200 rig an idle GPU drew 117 W at 1980 MHz for 20 s after a
    load without NVML ever setting gpu_idle.
    """
    power = row[POWER]
    if isinstance(power, (int, float)) and isinstance(power_limit_w, (int, float)) and power_limit_w > 0:
        return power <= idle_power_fraction * power_limit_w
    mask = row[REASONS]
    return isinstance(mask, int) and bool(mask & GPU_IDLE_BIT)


def _numbers(rows: Sequence[Sequence[Any]], column: int) -> List[float]:
    return [row[column] for row in rows if is_number(row[column])]


def _spread(values: List[float]) -> Dict[str, Any]:
    if not values:
        return unavailable("NVML gave no reading")
    return {"median": round(statistics.median(values), 1), "min": round(min(values), 1), "max": round(max(values), 1)}


def window_state(rows: Sequence[Sequence[Any]], start_s: float, end_s: float, sampling_interval_s: float) -> Dict[str, Any]:
    """The GPU's state inside [start_s, end_s]: clocks, power, temperature and every clock-event reason NVML showed."""
    inside = [row for row in rows if start_s <= row[T] <= end_s]
    if not inside:
        return unavailable("no NVML sample fell inside the %.1f ms window (sampling every %.0f ms)"
                           % ((end_s - start_s) * 1e3, sampling_interval_s * 1e3))
    mask = 0
    for row in inside:
        if isinstance(row[REASONS], int):
            mask |= row[REASONS]
    reasons = [name for name in decode_clock_event_reasons(mask) if name != "gpu_idle"]
    capped = [row for row in inside if isinstance(row[REASONS], int) and row[REASONS] & SW_POWER_CAP_BIT]
    first_cap = round(capped[0][T] - start_s, 3) if capped else None
    return {
        "samples": len(inside),
        "sm_clock_mhz": _spread(_numbers(inside, SM_CLOCK)),
        "power_w": _spread(_numbers(inside, POWER)),
        "temperature_c_max": max(_numbers(inside, TEMPERATURE)) if _numbers(inside, TEMPERATURE) else None,
        "clock_event_reasons_seen": reasons,
        "power_cap_reached": bool(capped),
        "power_cap_first_seen_after_s": first_cap,
        "samples_at_power_cap_pct": round(100.0 * len(capped) / len(inside), 1),
    }


def spread_pct(values: Sequence[float]) -> float:
    """(max - min) / median of the repeats, in percent: the width the judge holds against its thresholds."""
    center = statistics.median(values)
    return round(100.0 * (max(values) - min(values)) / center, 2) if center else 0.0


def summary(method: str, repeats_tflops: Sequence[float], windows: List[Dict[str, Any]]) -> Dict[str, Any]:
    """A method's result: the median of its repeats (what the judge decides on), their spread, and each window."""
    values = [float(value) for value in repeats_tflops]
    states = [window["state"] for window in windows if isinstance(window.get("state"), dict) and "samples" in window["state"]]
    clocks = [state["sm_clock_mhz"]["median"] for state in states if "median" in state["sm_clock_mhz"]]
    powers = [state["power_w"]["median"] for state in states if "median" in state["power_w"]]
    seen: List[str] = []
    for state in states:
        seen.extend(name for name in state["clock_event_reasons_seen"] if name not in seen)
    return {
        "method": method,
        "definition": METHODS[method],
        "tflops": significant(statistics.median(values)),
        "repeats_tflops": [significant(value) for value in values],
        "repeats": len(values),
        "spread_pct": spread_pct(values),
        "sm_clock_mhz_median": round(statistics.median(clocks), 1) if clocks else unavailable("no NVML sample in any window"),
        "power_w_median": round(statistics.median(powers), 1) if powers else unavailable("no NVML sample in any window"),
        "clock_event_reasons_seen": seen,
        "power_cap_reached": any(state["power_cap_reached"] for state in states),
        "windows": windows,
    }


def burst_note(result: Dict[str, Any]) -> str:
    """A sentence on whether the burst stayed ahead of the power cap."""
    capped = [window for window in result["windows"] if isinstance(window.get("state"), dict) and window["state"].get("power_cap_reached")]
    unseen = [window for window in result["windows"] if not isinstance(window.get("state"), dict) or "samples" not in window["state"]]
    if capped:
        first = [window["state"]["power_cap_first_seen_after_s"] for window in capped]
        return ("the software power cap engaged inside %d of %d burst windows (first seen %.3f s after the window began): "
                "this GPU reaches its power limit faster than the window; the burst figure is partly capped"
                % (len(capped), len(result["windows"]), min(first)))
    if unseen:
        return "%d of %d burst windows had no NVML sample inside them, so the cap cannot be ruled out there" % (
            len(unseen), len(result["windows"]))
    return "no burst window saw the software power cap: each ended before the cap engaged"


def sustained_note(result: Dict[str, Any], settled: bool, power_limit_w: Any) -> str:
    limit = " of a %g W limit" % power_limit_w if isinstance(power_limit_w, (int, float)) else ""
    power = result["power_w_median"]
    clock = result["sm_clock_mhz_median"]
    state = ("at the power cap (sw_power_cap in %s)" % ", ".join(result["clock_event_reasons_seen"])
             if result["power_cap_reached"] else "below the power cap")
    words = "steady state %s: median SM clock %s MHz, median power %s W%s" % (
        state, clock if isinstance(clock, (int, float)) else "unknown", power if isinstance(power, (int, float)) else "unknown", limit)
    if not settled:
        words += "; the settling time ended before the power reached the cap, so the GPU may not have been at steady state"
    return words
