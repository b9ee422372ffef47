# -*- coding: utf-8 -*-
# Copyright: gpufleet.validation contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The health probe's throttle history check: time each GPU spent in a hardware slowdown (thermal or power brake) since
the NVIDIA driver loaded (gpus[i].clock_event_durations). Context, never a failure on its own: the time may be old and
its cause gone; the load probe's window judges whether it happens now. Non-zero warns, with the seconds and their share
of the host's uptime."""
from __future__ import annotations

from typing import Any, Callable, Dict, List, Optional

from ...probe_kit.kit import (
    each_gpu_section, gpu_label, make_check, param_source, reads_params, Check, format_quantity, is_unavailable,
    HARDWARE_REASONS)

DURATIONS_KEY = "clock_event_durations"
CONTEXT_REASONS = ("sw_thermal_slowdown", "sw_power_cap")


def _seconds(entry: Any) -> Optional[float]:
    if not isinstance(entry, dict) or is_unavailable(entry):
        return None
    value = entry.get("s")
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else None


def _of_uptime(seconds: float, uptime: Any) -> str:
    """'(at least 0.042 % of the host's 2 h uptime)': the driver loaded at or after boot, so the share is a floor."""
    if not isinstance(uptime, (int, float)) or uptime <= 0:
        return ""
    return " (at least %s of the host's %s uptime)" % (format_quantity(100.0 * seconds / uptime, "%"),
                                                       format_quantity(uptime / 3600.0, "h"))


@reads_params("warn_above_s")
def clock_event_durations(host: str, data: Dict[str, Any], rule: Dict[str, Any], context: Any) -> List[Check]:
    return each_gpu_section(rule, host, data, DURATIONS_KEY, "clock-event duration counters since the driver loaded",
                            lambda gpu, durations: _gpu_check(host, gpu, durations, rule))


def _gpu_check(host: str, gpu: Dict[str, Any], durations: Dict[str, Any], rule: Dict[str, Any]) -> Check:
    reasons = durations.get("reasons") if isinstance(durations.get("reasons"), dict) else {}
    uptime = durations.get("uptime_s")
    allowed = float(rule["params"]["warn_above_s"])
    label = gpu_label(gpu)
    read = {name: _seconds(reasons.get(name)) for name in HARDWARE_REASONS}
    known = {name: seconds for name, seconds in read.items() if seconds is not None}
    others = ["%s %s" % (name, format_quantity(_seconds(reasons.get(name)), "s")) for name in CONTEXT_REASONS
              if _seconds(reasons.get(name)) is not None]
    tail = "; since the driver loaded also %s" % ", ".join(others) if others else ""
    fields = dict(unit="s", reference=allowed, reference_source=param_source(rule, "warn_above_s"),
                  threshold="warn above %s s since the driver loaded (never a failure on its own)" % format_quantity(allowed))
    if not known:
        why = "; ".join("%s: %s" % (name, reasons[name]["unavailable"]) for name in HARDWARE_REASONS
                        if is_unavailable(reasons.get(name)))
        return make_check(rule, host, "skip", "%s: no hardware slowdown duration counter could be read (%s)%s" % (
            label, why or "not recorded", tail), gpu, **fields)
    over = {name: seconds for name, seconds in known.items() if seconds > allowed}
    total = sum(known.values())
    if over:
        words = "; ".join("%s for %s since the driver loaded%s" % (name, format_quantity(seconds, "s"), _of_uptime(seconds, uptime))
                          for name, seconds in over.items())
        return make_check(rule, host, "warn", "%s: %s%s; context, not a failure: the time may be old and its cause gone; the load "
                          "probe's window says whether it happens under load now; if it does, check cooling and power delivery" % (
                              label, words, tail), gpu, value=round(total, 3), **fields)
    lead = "no hardware slowdown time" if total == 0 else "hardware slowdown time within %s" % format_quantity(allowed, "s")
    return make_check(rule, host, "pass", "%s: %s since the driver loaded (%s)%s" % (
        label, lead, ", ".join("%s %s" % (name, format_quantity(seconds, "s")) for name, seconds in known.items()), tail), gpu,
        value=round(total, 3), **fields)


THROTTLE_CHECKS: Dict[str, Callable[..., List[Check]]] = {
    "clock_event_durations": clock_event_durations,
}
