# -*- coding: utf-8 -*-
# Copyright: gpufleet.validation contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The load probe's throttle history check: how long each GPU spent in each clock-event reason during the load window,
from NVML's duration counters (gpus[i].clock_event_durations_window). A hardware slowdown (thermal or power brake) over
a share of the window fails; a blip shorter than a few tenths of a second does not; software thermal slowdown warns, then
fails; the software power cap at the power limit under a full matmul load is expected and said with its seconds."""
from __future__ import annotations

from typing import Any, Callable, Dict, List, Tuple

from ...probe_kit.kit import (
    each_gpu_section, gpu_label, make_check, param_source, reads_params, Check, format_quantity, is_unavailable,
    HARDWARE_REASONS, SOFTWARE_THERMAL, WINDOW_KEY, expected_words, in_window, window_seconds)

STATUS_ORDER = {"pass": 0, "warn": 1, "fail": 2}


def judge_reason(name: str, seconds: float, share: float, window_s: Any, params: Dict[str, Any]) -> Tuple[str, str]:
    """(status, words) of one slowdown reason against the rule's thresholds."""
    words = in_window(name, seconds, share, window_s)
    if name in HARDWARE_REASONS:
        if seconds <= float(params["hw_warn_s"]):  # a blip passes however short the window (NVIDIA/DCGM#242)
            return "pass", "%s: a blip of at most %s, not counted" % (words, format_quantity(params["hw_warn_s"], "s"))
        if share > float(params["hw_fail_pct"]):
            return "fail", "%s: over %s of the window" % (words, format_quantity(params["hw_fail_pct"], "%"))
        return "warn", "%s: longer than a %s blip, under the %s that fails" % (
            words, format_quantity(params["hw_warn_s"], "s"), format_quantity(params["hw_fail_pct"], "%"))
    if share > float(params["sw_thermal_fail_pct"]):
        return "fail", "%s: over %s of the window" % (words, format_quantity(params["sw_thermal_fail_pct"], "%"))
    if share > float(params["sw_thermal_warn_pct"]):
        return "warn", "%s: over %s of the window" % (words, format_quantity(params["sw_thermal_warn_pct"], "%"))
    return "pass", words


@reads_params("hw_warn_s", "hw_fail_pct", "sw_thermal_warn_pct", "sw_thermal_fail_pct")
def clock_event_durations(host: str, data: Dict[str, Any], rule: Dict[str, Any], context: Any) -> List[Check]:
    return each_gpu_section(rule, host, data, WINDOW_KEY, "clock-event duration counters over the load window",
                            lambda gpu, window: _gpu_check(host, gpu, window, rule))


def _gpu_check(host: str, gpu: Dict[str, Any], window: Dict[str, Any], rule: Dict[str, Any]) -> Check:
    reasons = window.get("reasons") if isinstance(window.get("reasons"), dict) else {}
    window_s = window.get("window_s")
    judged: List[Tuple[str, str, float]] = []
    missing = []
    for name in HARDWARE_REASONS + (SOFTWARE_THERMAL,):
        read = window_seconds(reasons.get(name))
        if read is None:
            entry = reasons.get(name)
            missing.append("%s (%s)" % (name, entry["unavailable"] if is_unavailable(entry) else "not recorded"))
            continue
        status, words = judge_reason(name, read[0], read[1], window_s, rule["params"])
        judged.append((status, words, read[0]))
    label = gpu_label(gpu)
    context_words = expected_words(reasons, window_s)
    if missing:
        context_words.append("not read: %s" % "; ".join(missing))
    if not judged:
        return make_check(rule, host, "skip", "%s: no slowdown duration counter could be read over the load window: %s" % (
            label, "; ".join(missing)), gpu)
    worst = max(judged, key=lambda item: (STATUS_ORDER[item[0]], item[2]))
    status = worst[0]
    if status == "pass" and all(seconds == 0 for unused_status, unused_words, seconds in judged):
        lead = "no hardware or thermal slowdown time during the %s load window" % format_quantity(window_s, "s")
    else:
        lead = "; ".join(words for unused_status, words, unused_seconds in sorted(judged, key=lambda item: -STATUS_ORDER[item[0]]))
    reason = "%s: %s" % (label, "; ".join([lead] + context_words))
    if status == "fail":
        reason += "; check cooling (fans, airflow, inlet temperature) and power delivery before trusting any number from this GPU"
    params = rule["params"]
    threshold = "hardware slowdown: warn over %s s, fail over %s %% of the window; sw thermal slowdown: warn over %s %%, fail over %s %%" % (
        params["hw_warn_s"], params["hw_fail_pct"], params["sw_thermal_warn_pct"], params["sw_thermal_fail_pct"])
    return make_check(rule, host, status, reason, gpu, value=round(worst[2], 3), unit="s", reference=params["hw_warn_s"],
                      reference_source=param_source(rule, "hw_warn_s"), threshold=threshold)


THROTTLE_CHECKS: Dict[str, Callable[..., List[Check]]] = {
    "clock_event_durations": clock_event_durations,
}
