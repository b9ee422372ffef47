"""Per-GPU summary of the sampled rows (pure): the active window's statistics, idle-to-active differences, and the
inputs of the checks (clocks rose, throttle reasons, power against its limit). Verdicts are the judge's."""
from __future__ import annotations

import statistics
from typing import Any, Dict, List, Optional, Sequence

from probe_packages.load.stats import fraction, spread
from probelib.fields import is_unavailable, number_or_none, numbers, unavailable
from probelib.nvml.clock_event_reasons import SLOWDOWN_REASONS, decode_clock_event_reasons
from probelib.nvml.gpu_reads import COLUMNS

METRICS = ("sm_clock_mhz", "mem_clock_mhz", "power_w", "temperature_c", "gpu_util_pct")
HARDWARE_SLOWDOWN = ("hw_slowdown", "hw_power_brake_slowdown")
THERMAL = ("sw_thermal_slowdown", "hw_thermal_slowdown")
POWER_CAP = "sw_power_cap"
_T = COLUMNS.index("t_s")
_MASK = COLUMNS.index("clock_event_reasons_mask")


def column(rows: Sequence[Sequence[Any]], name: str) -> List[Any]:
    position = COLUMNS.index(name)
    return [row[position] for row in rows]


def window(rows: Sequence[Sequence[Any]], start_s: float, end_s: Optional[float]) -> List[Sequence[Any]]:
    """Rows with start_s <= t <= end_s (end None: no upper bound)."""
    return [row for row in rows if row[_T] >= start_s and (end_s is None or row[_T] <= end_s)]


def active_stats(rows: Sequence[Sequence[Any]], start_s: float, end_s: Optional[float]) -> Dict[str, Any]:
    """{window_s, samples, metric: {median, max, min, samples}} over the rows of the active window."""
    stats: Dict[str, Any] = {"window_s": [start_s, end_s], "samples": len(rows)}
    for name in METRICS:
        stats[name] = spread(column(rows, name), digits=1) if rows else unavailable(
            "no sample in the active window (after warmup_s, before the load ended on this GPU)")
    return stats


def differences(before: Dict[str, Any], active: Dict[str, Any], after: Dict[str, Any]) -> Dict[str, Any]:
    """{active_minus_idle: {metric: active median - idle before}, after_minus_before: {metric: idle after - idle before}}."""
    def minus(later: Any, earlier: Any, what: str) -> Any:
        if later is None or earlier is None:
            return unavailable("%s is not known on both sides" % what)
        return round(later - earlier, 1)

    rise = {}
    drift = {}
    for name in METRICS:
        median = active.get(name)
        active_median = number_or_none(median.get("median")) if isinstance(median, dict) and not is_unavailable(median) else None
        rise[name] = minus(active_median, number_or_none(before.get(name)), name)
        drift[name] = minus(number_or_none(after.get(name)), number_or_none(before.get(name)), name)
    return {"active_minus_idle": rise, "after_minus_before": drift}


def clocks_rose(idle_sm: Any, active: Any, max_sm: Any, threshold_mhz: float) -> Dict[str, Any]:
    """Did the SM clock rise under load? basis: rose (active median > idle + threshold), idle_at_max (idle already within
    threshold of the maximum, so it could not rise), did_not_rise, or unknown (a value was not read)."""
    idle = number_or_none(idle_sm)
    median = number_or_none(active.get("median")) if isinstance(active, dict) and not is_unavailable(active) else None
    maximum = number_or_none(max_sm)
    result: Dict[str, Any] = {"idle_sm_clock_mhz": idle, "active_median_sm_clock_mhz": median, "max_sm_clock_mhz": maximum,
                              "threshold_mhz": threshold_mhz,
                              "active_fraction_of_max": round(median / maximum, 4) if median is not None and maximum else None}
    if idle is None or median is None:
        result.update({"rose": None, "basis": "unknown",
                       "note": "the idle or the active SM clock was not read, so whether it rose is unknown"})
    elif median - idle > threshold_mhz:
        result.update({"rose": True, "basis": "rose",
                       "note": "the active median SM clock %g MHz is %g MHz above the idle %g MHz (more than %g)"
                               % (median, median - idle, idle, threshold_mhz)})
    elif maximum is not None and idle >= maximum - threshold_mhz:
        result.update({"rose": True, "basis": "idle_at_max",
                       "note": "the idle SM clock %g MHz was already within %g MHz of the maximum %g MHz, so it could not "
                               "rise; the active median is %g MHz" % (idle, threshold_mhz, maximum, median)})
    else:
        result.update({"rose": False, "basis": "did_not_rise",
                       "note": "the active median SM clock %g MHz is not more than %g MHz above the idle %g MHz%s"
                               % (median, threshold_mhz, idle,
                                  " (maximum %g MHz)" % maximum if maximum is not None else "")})
    return result


def throttle(load_rows: Sequence[Sequence[Any]], active_rows: Sequence[Sequence[Any]]) -> Dict[str, Any]:
    """Clock event reasons: per name the fraction of active-window samples that carried it, the samples of the whole load
    that did, and when it was first seen; whether a hardware slowdown or a thermal one was seen at any time of the load."""
    reasons: Dict[str, Dict[str, Any]] = {}
    read_load = [row for row in load_rows if isinstance(row[_MASK], int)]
    read_active = [row for row in active_rows if isinstance(row[_MASK], int)]
    for row in read_load:
        for name in decode_clock_event_reasons(row[_MASK]):
            entry = reasons.setdefault(name, {"fraction_active": 0.0, "samples_load": 0, "first_seen_s": row[_T]})
            entry["samples_load"] += 1
            entry["first_seen_s"] = min(entry["first_seen_s"], row[_T])
    for name, entry in reasons.items():
        carried = sum(1 for row in read_active if name in decode_clock_event_reasons(row[_MASK]))
        entry["fraction_active"] = fraction(carried, len(read_active)) if read_active else None
    slowdowns = sorted(name for name in reasons if name in SLOWDOWN_REASONS)
    return {
        "samples_load": len(read_load),
        "samples_active": len(read_active),
        "reasons": dict(sorted(reasons.items())),
        "hardware_slowdown": any(name in reasons for name in HARDWARE_SLOWDOWN),
        "thermal": any(name in reasons for name in THERMAL),
        "slowdown_reasons_seen": slowdowns,
        "first_slowdown_s": min((reasons[name]["first_seen_s"] for name in slowdowns), default=None),
        "sw_power_cap_fraction": reasons[POWER_CAP]["fraction_active"] if POWER_CAP in reasons
        else (0.0 if read_active else None),
    }


def power(load_rows: Sequence[Sequence[Any]], active_rows: Sequence[Sequence[Any]], limit_w: Any,
          margin_pct: float) -> Dict[str, Any]:
    """Power against the enforced limit: median and max of the active window, the max of the whole load, and the fraction
    of active samples above limit x (1 + margin_pct / 100)."""
    active = numbers(column(active_rows, "power_w"))
    whole = numbers(column(load_rows, "power_w"))
    limit = number_or_none(limit_w)
    result: Dict[str, Any] = {
        "limit_w": limit if limit is not None else limit_w,
        "margin_pct": margin_pct,
        "median_w": round(statistics.median(active), 1) if active else None,
        "max_w": round(max(active), 1) if active else None,
        "max_w_load": round(max(whole), 1) if whole else None,
        "samples_active": len(active),
    }
    if limit is None or not active:
        result["threshold_w"] = None
        result["fraction_over_limit"] = None
        return result
    threshold = limit * (1 + margin_pct / 100.0)
    result["threshold_w"] = round(threshold, 3)
    result["fraction_over_limit"] = fraction(sum(1 for value in active if value > threshold), len(active))
    result["median_fraction_of_limit"] = round(result["median_w"] / limit, 4) if limit else None
    return result


def summarize_gpu(rows: Sequence[Sequence[Any]], before: Dict[str, Any], after: Dict[str, Any], load_end_s: Optional[float],
                  plan: Dict[str, Any]) -> Dict[str, Any]:
    """Everything the judge and the dossier need from one GPU's rows and its two idle snapshots."""
    load_rows = window(rows, 0.0, load_end_s)
    active_rows = window(rows, plan["warmup_s"], load_end_s)
    active = active_stats(active_rows, plan["warmup_s"], load_end_s)
    return {
        "active": active,
        "differences": differences(before, active, after),
        "clocks": clocks_rose(before.get("sm_clock_mhz"), active["sm_clock_mhz"], before.get("max_sm_clock_mhz"),
                              plan["clock_rise_mhz"]),
        "throttle": throttle(load_rows, active_rows),
        "power": power(load_rows, active_rows, before.get("power_limit_w"), plan["power_margin_pct"]),
    }
