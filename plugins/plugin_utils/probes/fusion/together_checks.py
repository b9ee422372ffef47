"""fusion's together check (issue 35): each worker's achieved bandwidth of the elementwise chain, unfused and fused, while
every GPU runs it at once, against the alone phase's at the same size shared among the workers on the device. The chain
is bandwidth-bound at its largest size, so a GPU whose memory slows under the node's load shows here; the compiler's
fusion itself is not judged (the same software runs alone and together)."""
from __future__ import annotations

from typing import Any, Callable, Dict, List, Tuple

from ...probe_kit.kit import (
    param_source, reads_params, Check, format_quantity, is_unavailable, number_or_none, STATUS_ORDER, each_worker,
    finish, percent_status, sharing_words, time_slicing_words, expected_share)

VERSIONS = ("unfused", "fused")


def _version(entry: Dict[str, Any], result: Dict[str, Any], alone: Dict[str, Any], version: str,
             params: Dict[str, Any]) -> Tuple[str, str, float]:
    key = "%s_achieved_gbps" % version
    together, reference = result.get(key), alone.get(key)
    expected = expected_share(reference, entry)
    if number_or_none(together) is None or expected is None:
        why = next((value["unavailable"] for value in (together, reference) if is_unavailable(value)), "not recorded")
        return "skip", "%s not compared: %s" % (version, why), 0.0
    percent = 100.0 * float(together) / expected
    words = "%s %s together against %s alone%s = %s: %s of it" % (
        version, format_quantity(together, "GB/s"), format_quantity(reference, "GB/s"), sharing_words(entry),
        format_quantity(expected, "GB/s"), format_quantity(percent, "%"))
    return percent_status(percent, params, entry.get("workers_on_device")), words, percent


@reads_params("warn_below_pct", "shared_device_pct")
def together_bandwidth(host: str, data: Dict[str, Any], rule: Dict[str, Any], context: Any) -> List[Check]:
    together = data.get("together") if isinstance(data, dict) else None
    alone = together.get("alone_reference") if isinstance(together, dict) and isinstance(together.get("alone_reference"), dict) else {}
    return each_worker(rule, host, data, lambda entry, result, unused_gpu, unused_label:
                       _worker_check(rule, host, together, entry, result, alone))


def _worker_check(rule: Dict[str, Any], host: str, together: Dict[str, Any], entry: Dict[str, Any], result: Dict[str, Any],
                  alone: Dict[str, Any]) -> Check:
    params = rule["params"]
    if result.get("elements") != alone.get("elements"):
        return finish(rule, host, together, entry, "skip", "timed at %s elements, the alone reference at %s: not the same size"
                      % (result.get("elements"), alone.get("elements")))
    judged = [_version(entry, result, alone, version, params) for version in VERSIONS]
    words = "at %s elements: %s" % (result.get("elements"), "; ".join(item[1] for item in judged))
    compared = [item for item in judged if item[0] != "skip"]
    if not compared:
        return finish(rule, host, together, entry, "skip", words)
    words += time_slicing_words(params, entry.get("workers_on_device"))  # both versions' allowance, said once
    worst = max(compared, key=lambda item: (STATUS_ORDER[item[0]], -item[2]))
    threshold = "each version >= %s %% of the alone bandwidth / workers on the device" % params["warn_below_pct"]
    return finish(rule, host, together, entry, worst[0], words, value=round(worst[2], 1), unit="%",
                  reference=params["warn_below_pct"], reference_source=param_source(rule, "warn_below_pct"), threshold=threshold)


TOGETHER_CHECKS: Dict[str, Callable[..., List[Check]]] = {"together_bandwidth": together_bandwidth}
