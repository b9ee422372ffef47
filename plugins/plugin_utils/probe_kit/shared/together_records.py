"""What the together checks of the per-GPU probes share (issue 35): the together record of a result (data["together"],
the run_together record with the alone reference: probes/probelib/measure/together.py), each worker's GPU, one check per
worker ("GPU 0 worker 1"), a skip where the phase did not run, an error where a worker failed, a warn instead of a pass
where the workers were not released together (their numbers were not taken at the same time), and a worker's percentage
of its share judged against warn_below_pct and fail_below_pct.

A worker is compared with the alone reference divided by the workers that share its resource (the same device:
workers_on_device), so two workers on one GPU are each held to half the GPU's alone rate.
"""
from __future__ import annotations

from typing import Any, Callable, Dict, List, Optional, Tuple

from ...judge.check_helpers import make_check
from ...judge.model import Check
from ...result_fields import dig, error_words, is_unavailable
from .together_view import device_sharers, release_words, worker_label

STATUS_ORDER = {"skip": 0, "pass": 1, "warn": 2, "error": 3, "fail": 4}
CPU_NOT_JUDGED = ("the CPU path: its together phase runs the concurrency code for real, but a CPU shared with the "
                  "host's other work is not held to its alone rate")
# judge_one(worker record, its result, its GPU {index, uuid}, its label) -> the worker's check
JudgeOne = Callable[[Dict[str, Any], Dict[str, Any], Dict[str, Any], str], Check]


def together_record(rule: Dict[str, Any], host: str, data: Any) -> Tuple[Optional[Dict[str, Any]], List[Check]]:
    """(the record, []) where the together phase ran; (None, [a skip saying why]) where it did not or the result
    predates it."""
    together = data.get("together") if isinstance(data, dict) else None
    if together is None:
        return None, [make_check(rule, host, "skip", "this result holds no together phase (written by a probe older "
                                 "than the together phase); run the probe again")]
    if is_unavailable(together):
        return None, [make_check(rule, host, "skip", "the together phase did not run: %s" % together["unavailable"])]
    if not isinstance(together, dict) or not isinstance(together.get("workers"), list):
        return None, [make_check(rule, host, "error", "the together record holds no workers list")]
    return together, []


def percent_bounds_and_reference(rule: Dict[str, Any], data: Any) -> Tuple[float, float, Any]:
    """(warn_below_pct, fail_below_pct, the together record's alone_reference or None) of a together check."""
    record = data.get("together") if isinstance(data, dict) else None
    return (float(rule["params"]["warn_below_pct"]), float(rule["params"]["fail_below_pct"]),
            record.get("alone_reference") if isinstance(record, dict) else None)


def worker_gpu(entry: Dict[str, Any]) -> Dict[str, Any]:
    """The GPU a check on this worker names: its index, and its UUID where the worker reported it."""
    uuid = dig(entry, "result", "device", "uuid")
    return {"index": entry.get("device_index"), "uuid": uuid if isinstance(uuid, str) else None}


def sharing_words(entry: Dict[str, Any]) -> str:
    """'' for a worker alone on its device, ' / 2 workers on the device' for one of two."""
    sharers = device_sharers(entry)
    return "" if sharers == 1 else " / %d workers on the device" % sharers


def time_slicing_pct(params: Dict[str, Any], workers_on_device: Any) -> float:
    """The share of its owed rate a worker is held to: shared_device_pct where several processes time-slice one GPU's
    SMs (the rule's param, measured on the rig), 100 for a worker alone on its GPU or a rule without the param."""
    sharing = workers_on_device if isinstance(workers_on_device, int) else 1
    return float(params["shared_device_pct"]) if sharing > 1 and "shared_device_pct" in params else 100.0


def percent_status(percent: float, params: Dict[str, Any], workers_on_device: Any = 1) -> str:
    """fail below fail_below_pct (where the rule has one), warn below warn_below_pct; percent is first divided by the
    time-slicing allowance where workers share a device."""
    percent = 100.0 * percent / time_slicing_pct(params, workers_on_device)
    if "fail_below_pct" in params and percent < float(params["fail_below_pct"]):
        return "fail"
    if percent < float(params["warn_below_pct"]):
        return "warn"
    return "pass"


def time_slicing_words(params: Dict[str, Any], workers_on_device: Any) -> str:
    """'' for a worker alone on its GPU; else the allowance the lines are scaled by, in words."""
    allowance = time_slicing_pct(params, workers_on_device)
    if allowance >= 100.0:
        return ""
    return ("; the lines apply to %g %% of that share: %d processes time-slice one GPU (shared_device_pct, measured on the rig)"
            % (allowance, workers_on_device))


def failed_worker_check(rule: Dict[str, Any], host: str, entry: Dict[str, Any]) -> Check:
    """The error check of a worker that failed (or ended ok without a result)."""
    return make_check(rule, host, "error", "%s: the together worker failed: %s"
                      % (worker_label(entry), error_words(entry.get("error")) or "it returned no result"), worker_gpu(entry))


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


def each_worker(rule: Dict[str, Any], host: str, data: Any, judge_one: JudgeOne) -> List[Check]:
    """One check per worker of data["together"]: judge_one's for an ok worker, at least a warn where the workers were
    not released together; the failed worker's error; the skip (or error) of together_record where there is none."""
    together, checks = together_record(rule, host, data)
    if together is None:
        return checks
    release = release_words(together)
    for entry in together["workers"]:
        if not isinstance(entry, dict):
            continue
        if entry.get("status") != "ok" or not isinstance(entry.get("result"), dict):
            checks.append(failed_worker_check(rule, host, entry))
            continue
        check = judge_one(entry, entry["result"], worker_gpu(entry), worker_label(entry))
        if release and check.status == "pass":
            check.status = "warn"
            check.reason += "; %s" % release
        checks.append(check)
    return checks
