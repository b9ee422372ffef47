"""What the together checks and views of the per-GPU probes share (issue 35): the together record of a result
(data["together"], the run_together record with the alone reference), each worker's name and GPU, the alone reference's
share per worker, and the words for workers that were not released together.

A worker is compared with the alone reference divided by the workers that share its resource (the same device:
workers_on_device), so two workers on one GPU are each held to half the GPU's alone rate.
"""
from __future__ import annotations

from typing import Any, Dict, List, Optional, Tuple

from ..judge.check_helpers import make_check
from ..judge.model import Check
from ..number_format import format_quantity
from ..result_fields import dig, is_unavailable, number_or_none
from .together_view import expected_share, worker_label

STATUS_ORDER = {"skip": 0, "pass": 1, "warn": 2, "error": 3, "fail": 4}
CPU_NOT_JUDGED = ("the CPU path: its together phase runs the concurrency code for real, but a CPU shared with the "
                  "host's other work is not held to its alone rate")


def together_record(rule: Dict[str, Any], host: str, data: Any) -> Tuple[Optional[Dict[str, Any]], List[Check]]:
    """(the record, []) where the together phase ran; (None, [a skip saying why]) where it did not or the result
    predates it."""
    together = data.get("together") if isinstance(data, dict) else None
    if together is None:
        return None, [make_check(rule, host, "skip", "this result has no together phase (written by a probe older than "
                                 "the together phase); run the probe again")]
    if is_unavailable(together):
        return None, [make_check(rule, host, "skip", "the together phase did not run: %s" % together["unavailable"])]
    if not isinstance(together, dict) or not isinstance(together.get("workers"), list):
        return None, [make_check(rule, host, "error", "the together record has no workers list")]
    return together, []


def worker_gpu(entry: Dict[str, Any]) -> Dict[str, Any]:
    """The GPU a check on this worker names: its index, and its UUID where the worker reported it."""
    return {"index": entry.get("device_index"), "uuid": dig(entry, "result", "device", "uuid")}


def sharing_words(entry: Dict[str, Any]) -> str:
    """'' for a worker alone on its device, ' / 2 workers on the device' for one of two."""
    sharers = entry.get("workers_on_device") or 1
    return "" if sharers == 1 else " / %d workers on the device" % sharers


def percent_status(percent: float, params: Dict[str, Any]) -> str:
    """fail below fail_below_pct (where the rule has one), warn below warn_below_pct."""
    if "fail_below_pct" in params and percent < float(params["fail_below_pct"]):
        return "fail"
    if percent < float(params["warn_below_pct"]):
        return "warn"
    return "pass"


def release_words(together: Dict[str, Any]) -> str:
    """Why the workers' windows may not have overlapped ('' when they were released together)."""
    if together.get("released_together") is not False:
        return ""
    return ("the workers were not released together (start spread %s): their windows may not have overlapped, so this is "
            "not every GPU at once" % format_quantity(together.get("start_spread_ms"), "ms"))


def failed_worker_check(rule: Dict[str, Any], host: str, entry: Dict[str, Any]) -> Check:
    return make_check(rule, host, "error", "%s: the together worker failed: %s" % (worker_label(entry), entry.get("error", "no reason")),
                      worker_gpu(entry))


def finish(rule: Dict[str, Any], host: str, together: Dict[str, Any], entry: Dict[str, Any], status: str, reason: str,
           **fields: Any) -> Check:
    """The worker's check: skipped on the CPU path, at least a warn where the workers were not released together."""
    if entry.get("kind") == "cpu":
        return make_check(rule, host, "skip", "%s: %s; %s" % (worker_label(entry), CPU_NOT_JUDGED, reason), worker_gpu(entry), **fields)
    release = release_words(together)
    if release:
        status = "warn" if status == "pass" else status
        reason = "%s; %s" % (reason, release)
    return make_check(rule, host, status, "%s: %s" % (worker_label(entry), reason), worker_gpu(entry), **fields)
