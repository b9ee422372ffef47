# -*- coding: utf-8 -*-
# Copyright: gpufleet.validation contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""What every probe's together checks share: the together record (data["together"], written by the host's together
runner: probes/probelib/measure/together.py) read once, one check per worker named "GPU 0 worker 1", a skip where the
phase did not run, an error where a worker failed, and a warn instead of a pass where the workers did not start together
(their numbers were not taken at the same time).
"""
from __future__ import annotations

from typing import Any, Callable, Dict, List, Optional, Tuple

from ..result_fields import dig, is_unavailable, unavailable_reason
from .check_helpers import make_check
from .model import Check

NOT_CONCURRENT = ("the workers did not all pass the start line together (released_together is false), so these numbers "
                  "were not taken at the same time: re-run")
# judge_one(worker record, its result, its GPU {index, uuid}, its label) -> the worker's check
JudgeOne = Callable[[Dict[str, Any], Dict[str, Any], Dict[str, Any], str], Check]


def worker_gpu(worker: Dict[str, Any]) -> Tuple[Dict[str, Any], str]:
    """({index, uuid} of the worker's device, "GPU 0 worker 1"): the uuid where its result names its device."""
    index = worker.get("device_index")
    uuid = dig(worker, "result", "device", "uuid")
    kind = "CPU" if worker.get("kind") == "cpu" else "GPU"
    return {"index": index, "uuid": uuid if isinstance(uuid, str) else None}, "%s %s worker %s" % (kind, index, worker.get("worker"))


def together_of(rule: Dict[str, Any], host: str, data: Any) -> Tuple[Optional[Dict[str, Any]], List[Check]]:
    """(the together record, []) or (None, [the skip that says why there is none to judge])."""
    record = data.get("together") if isinstance(data, dict) else None
    if record is None:
        return None, [make_check(rule, host, "skip", "this result holds no together phase (a probe from before every GPU "
                                 "was measured at once)")]
    if is_unavailable(record):
        return None, [make_check(rule, host, "skip", "the together phase did not run: %s" % unavailable_reason(record))]
    if not isinstance(record, dict) or not isinstance(record.get("workers"), list):
        return None, [make_check(rule, host, "error", "the together record holds no workers list")]
    return record, []


def each_worker(rule: Dict[str, Any], host: str, data: Any, judge_one: JudgeOne) -> List[Check]:
    """One check per worker of data["together"] (see the module)."""
    record, checks = together_of(rule, host, data)
    if record is None:
        return checks
    apart = record.get("released_together") is False
    for worker in record["workers"]:
        if not isinstance(worker, dict):
            continue
        gpu, label = worker_gpu(worker)
        if worker.get("status") != "ok" or not isinstance(worker.get("result"), dict):
            checks.append(make_check(rule, host, "error", "%s failed in the together phase: %s"
                                     % (label, worker.get("error") or "it returned no result"), gpu))
            continue
        check = judge_one(worker, worker["result"], gpu, label)
        if apart and check.status == "pass":
            check.status = "warn"
            check.reason += "; but %s" % NOT_CONCURRENT
        checks.append(check)
    return checks


def share_status(pct: float, warn_below_pct: float, fail_below_pct: float) -> str:
    """pass, warn or fail of a worker's rate as a percentage of its fair share of the alone rate."""
    if pct < fail_below_pct:
        return "fail"
    return "warn" if pct < warn_below_pct else "pass"
