"""gemm's together checks (issue 35): every GPU's sustained matmul rate while every GPU runs at once, against the alone
phase's sustained rate shared among the workers on the device; and the hardware slowdown time NVML counted on each GPU
during its together window (a node whose power delivery or cooling cannot hold every GPU at its limit)."""
from __future__ import annotations

from typing import Any, Callable, Dict, List, Tuple

from ...probe_kit.kit import (
    make_check, param_source, reads_params, Check, format_quantity, is_unavailable, number_or_none, HARDWARE_REASONS,
    SOFTWARE_THERMAL, WINDOW_KEY, expected_words, STATUS_ORDER, each_worker, finish, percent_status, sharing_words,
    time_slicing_words, worker_gpu, expected_share, worker_label)


def _dtype_words(entry: Dict[str, Any], dtype: str, record: Any, alone: Any,
                 params: Dict[str, Any]) -> Tuple[str, str, float]:
    """(status, words, % of the expected share) of one dtype; status "skip" where there is nothing to compare."""
    if is_unavailable(record) or not isinstance(record, dict):
        return "skip", "%s not timed together: %s" % (dtype, record.get("unavailable") if isinstance(record, dict) else record), 0.0
    together = number_or_none(record.get("tflops"))
    reference = alone.get("tflops") if isinstance(alone, dict) else None
    expected = expected_share(reference, entry)
    if together is None or expected is None:
        why = alone.get("unavailable") if is_unavailable(alone) else "no alone sustained rate"
        return "skip", "%s %s together, not compared: %s" % (dtype, format_quantity(together, "TFLOP/s"), why), 0.0
    percent = 100.0 * together / expected
    words = "%s %s together against %s alone%s = %s: %s of it" % (
        dtype, format_quantity(together, "TFLOP/s"), format_quantity(reference, "TFLOP/s"), sharing_words(entry),
        format_quantity(expected, "TFLOP/s"), format_quantity(percent, "%"))
    words += time_slicing_words(params, entry.get("workers_on_device"))
    return percent_status(percent, params, entry.get("workers_on_device")), words, percent


@reads_params("warn_below_pct", "fail_below_pct", "shared_device_pct")
def together_sustained(host: str, data: Dict[str, Any], rule: Dict[str, Any], context: Any) -> List[Check]:
    together = data.get("together") if isinstance(data, dict) else None
    alone = ((together.get("alone_reference") if isinstance(together, dict) else None) or {}).get("sustained") or {}
    return each_worker(rule, host, data, lambda entry, result, unused_gpu, unused_label:
                       _sustained_check(rule, host, together, entry, result, alone))


def _sustained_check(rule: Dict[str, Any], host: str, together: Dict[str, Any], entry: Dict[str, Any],
                     result: Dict[str, Any], alone: Dict[str, Any]) -> Check:
    params = rule["params"]
    rates = result.get("sustained") or {}
    judged = [_dtype_words(entry, dtype, record, alone.get(dtype), params) for dtype, record in sorted(rates.items())]
    words = "; ".join(words for unused_status, words, unused_percent in judged) or "no dtype was timed"
    compared = [item for item in judged if item[0] != "skip"]
    if not compared:
        return finish(rule, host, together, entry, "skip", words)
    worst = max(compared, key=lambda item: (STATUS_ORDER[item[0]], -item[2]))
    threshold = "each dtype >= %s %% of the alone sustained rate / workers on the device (warn below %s %%)" % (
        params["fail_below_pct"], params["warn_below_pct"])
    return finish(rule, host, together, entry, worst[0], words, value=round(worst[2], 1), unit="%",
                  reference=params["fail_below_pct"], reference_source=param_source(rule, "fail_below_pct"), threshold=threshold)


def _grown_s(reasons: Dict[str, Any], name: str) -> Any:
    entry = reasons.get(name)
    if isinstance(entry, dict) and number_or_none(entry.get("s")) is not None:
        return float(entry["s"])
    return entry["unavailable"] if is_unavailable(entry) else "not recorded"


@reads_params("hw_fail_s", "sw_thermal_warn_s")
def together_throttle(host: str, data: Dict[str, Any], rule: Dict[str, Any], context: Any) -> List[Check]:
    together = data.get("together") if isinstance(data, dict) else None
    return each_worker(rule, host, data, lambda entry, result, unused_gpu, unused_label:
                       _throttle_check(rule, host, together, entry, result))


def _throttle_check(rule: Dict[str, Any], host: str, together: Dict[str, Any], entry: Dict[str, Any], result: Dict[str, Any]) -> Check:
    window = result.get(WINDOW_KEY)
    if entry.get("kind") == "cpu" or is_unavailable(window) or not isinstance(window, dict):
        why = window["unavailable"] if is_unavailable(window) else "not recorded"
        return make_check(rule, host, "skip", "%s: no clock-event duration counters over its together window: %s"
                          % (worker_label(entry), why), worker_gpu(entry))
    params = rule["params"]
    reasons = window.get("reasons") if isinstance(window.get("reasons"), dict) else {}
    window_s = window.get("window_s")
    found: List[Tuple[str, str, float]] = []
    unread = []
    for name in HARDWARE_REASONS + (SOFTWARE_THERMAL,):
        seconds = _grown_s(reasons, name)
        if not isinstance(seconds, float):
            unread.append("%s (%s)" % (name, seconds))
            continue
        limit = float(params["hw_fail_s"] if name in HARDWARE_REASONS else params["sw_thermal_warn_s"])
        status = "pass" if seconds <= limit else ("fail" if name in HARDWARE_REASONS else "warn")
        words = "%s grew %s during the %s together window" % (name, format_quantity(seconds, "s"), format_quantity(window_s, "s"))
        found.append((status, words, seconds))
    context_words = expected_words(reasons, window_s) + (["not read: %s" % "; ".join(unread)] if unread else [])
    if not found:
        return finish(rule, host, together, entry, "skip", "no slowdown counter could be read: %s" % "; ".join(unread))
    worst = max(found, key=lambda item: (STATUS_ORDER[item[0]], item[2]))
    lead = "; ".join(words for status, words, unused in found if status != "pass") or (
        "no hardware or thermal slowdown time during the %s together window" % format_quantity(window_s, "s"))
    reason = "; ".join([lead] + context_words)
    if worst[0] == "fail":
        reason += "; under every GPU at once the node cannot hold this GPU at its limit: check power delivery (PSUs, the " \
                  "power brake signal) and cooling"
    threshold = "hw_thermal_slowdown or hw_power_brake_slowdown growth <= %s s; sw_thermal_slowdown warns over %s s" % (
        params["hw_fail_s"], params["sw_thermal_warn_s"])
    return finish(rule, host, together, entry, worst[0], reason, value=round(worst[2], 3), unit="s",
                  reference=params["hw_fail_s"], reference_source=param_source(rule, "hw_fail_s"), threshold=threshold)


TOGETHER_CHECKS: Dict[str, Callable[..., List[Check]]] = {
    "together_sustained": together_sustained,
    "together_throttle": together_throttle,
}
