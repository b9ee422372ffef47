# -*- coding: utf-8 -*-
# Copyright: gpufleet.validation contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""A busy GPU is not a broken GPU: what a probe measured on a GPU another job computed on is not validated.

Every measuring probe's data records the compute processes on each GPU that were not its own, before and during its
measurement (``foreign_gpu_processes``, schemas/common.schema.json; probes/probelib/measure/foreign_processes.py). On
a GPU with one:

- the probe's checks that such a job distorts (its baseline checks and those its judging names in busy_distorts) are
  ``skip`` "not validated: busy: <process>", whatever they found (unless_busy);
- its numbers there are no fleet or drift metric (without_busy);
- the probe's own ``<probe>.gpu_busy`` check (warn, action rerun_when_idle) says so: the root cause, or folded under
  the check its judge_checks entry follows (the machine probe's process check) where that one saw the job too
  (settle_busy). The skipped checks and the probe's unfinished status fold under that root.

Pure Python; it knows no probe by name.
"""
from __future__ import annotations

import functools
from typing import Any, Callable, Dict, Iterable, List, Mapping, Optional

from ..report.number_format import format_quantity
from ..result_fields import is_unavailable
from .check_helpers import gpu_label
from .model import Check
from .not_compared import PEERS_ONLY_SOURCE

RECORD_KEY = "foreign_gpu_processes"
BUSY_SUFFIX = ".gpu_busy"
BUSY_ACTION = "rerun_when_idle"
NOT_VALIDATED = "not validated: busy: "
PROBE_STATUS_SUFFIX = ".probe_status"


def process_words(process: Mapping[str, Any]) -> str:
    """'python3 (pid 2172, 62.8 GiB)'."""
    name = process.get("name") if isinstance(process.get("name"), str) else "<name unreadable>"
    memory = process.get("used_memory_mib")
    held = ""
    if isinstance(memory, (int, float)) and not isinstance(memory, bool):
        held = ", %s" % (format_quantity(memory / 1024.0, "GiB") if memory >= 1024 else format_quantity(memory, "MiB"))
    return "%s (pid %s%s)" % (name, process.get("pid"), held)


def _merged(parts: Iterable[Any]) -> Dict[Any, Dict[str, Any]]:
    seen: Dict[Any, Dict[str, Any]] = {}
    for part in parts:
        for process in part if isinstance(part, list) else []:
            if not isinstance(process, Mapping):
                continue
            known = seen.setdefault(process.get("pid"), dict(process))
            used, most = process.get("used_memory_mib"), known.get("used_memory_mib")
            if isinstance(used, (int, float)) and (not isinstance(most, (int, float)) or used > most):
                known["used_memory_mib"] = used
    return seen


class Busy:
    """The GPUs of one probe result that another job computed on: {uuid: (when, [processes])}."""

    def __init__(self, data: Any) -> None:
        self.gpus: Dict[str, Dict[str, Any]] = {}
        record = data.get(RECORD_KEY) if isinstance(data, Mapping) else None
        if not isinstance(record, Mapping) or is_unavailable(record):
            return
        for gpu in record.get("gpus") or []:
            if not isinstance(gpu, Mapping) or not isinstance(gpu.get("uuid"), str):
                continue
            when = [part for part in ("before", "during") if isinstance(gpu.get(part), list) and gpu[part]]
            processes = _merged(gpu.get(part) for part in ("before", "during"))
            if processes:
                self.gpus[gpu["uuid"]] = {"index": gpu.get("nvml_index"), "when": when,
                                          "processes": [processes[pid] for pid in sorted(processes, key=str)]}

    def __bool__(self) -> bool:
        return bool(self.gpus)

    def of(self, uuid: Optional[str]) -> Optional[str]:
        """The uuid of the busy GPU a check about ``uuid`` is distorted by (any busy GPU for a check of the host's GPUs)."""
        if uuid is None:
            return next(iter(sorted(self.gpus)), None)
        return uuid if uuid in self.gpus else None

    def words(self, uuid: str, probe: str) -> str:
        """'python3 (pid 2172, 62.8 GiB) computed on GPU 0 (GPU-8eb0778b-) before and during the gemm measurement'."""
        gpu = self.gpus[uuid]
        return "%s computed on %s %s the %s measurement" % (
            ", ".join(process_words(process) for process in gpu["processes"]), gpu_label({"index": gpu["index"], "uuid": uuid}),
            " and ".join(gpu["when"]), probe)


def not_validated(check: Check, busy: Busy, probe: str) -> Check:
    """A check of a busy GPU as what it is: a skip, "not validated: busy: ...", what was measured kept in its words. An
    error stays one, and a skip that holds no value (nothing was measured) stays as it is."""
    uuid = busy.of(check.gpu_uuid)
    if uuid is None or check.status == "error" or (check.status == "skip" and check.value is None):
        return check
    check.reason = "%s%s; so this is not judged (what was found: %s)" % (NOT_VALIDATED, busy.words(uuid, probe), check.reason)
    check.status = "skip"
    if check.reference_source.startswith(PEERS_ONLY_SOURCE):  # nothing left to wait for: the fleet never sees the value
        check.reference_source = ""
    check.because = probe + BUSY_SUFFIX
    check.action, check.remedy = "", ""
    return check


def unless_busy(function: Callable[..., List[Check]]) -> Callable[..., List[Check]]:
    """A check function whose findings on a GPU another job computed on are "not validated: busy" skips."""
    @functools.wraps(function)
    def check(host: str, data: Dict[str, Any], rule: Dict[str, Any], context: Any) -> List[Check]:
        found = function(host, data, rule, context)
        busy = Busy(data)
        if not busy:
            return found
        return [not_validated(one, busy, rule.get("probe") or "") for one in found]
    return check


def without_busy(metrics: List[Any], data: Any) -> List[Any]:
    """The metrics of a probe result less those of a GPU another job computed on (no fleet outlier, no drift from them)."""
    busy = Busy(data)
    return [metric for metric in metrics if getattr(metric, "gpu_uuid", None) not in busy.gpus] if busy else metrics


def busy_checks(host: str, probe: str, data: Any) -> List[Check]:
    """The probe's <probe>.gpu_busy check of each GPU another job computed on while it measured."""
    busy = Busy(data)
    checks = []
    for uuid in sorted(busy.gpus):
        gpu = busy.gpus[uuid]
        checks.append(Check(
            id=probe + BUSY_SUFFIX, host=host, probe=probe, status="warn", gpu_uuid=uuid, gpu_index=gpu["index"],
            reason="%s%s; what the %s probe measured there is not validated (a busy GPU is not a broken GPU): re-run when "
                   "the GPU is idle" % (NOT_VALIDATED, busy.words(uuid, probe), probe),
            value=[process_words(process) for process in gpu["processes"]], reference=[],
            threshold="no other compute process on the GPU before or during the measurement", action=BUSY_ACTION))
    return checks


def settle_busy(checks: List[Check], follows: Callable[[str], Iterable[str]]) -> None:
    """Fold each <probe>.gpu_busy check under the check it follows (follows(id): the declared causes) where that one
    found the same GPU busy (warn or fail), and point every check that names a busy check as its cause, and the
    probe's own unfinished status, at that root."""
    busy = [check for check in checks if check.id.endswith(BUSY_SUFFIX)]
    if not busy:
        return
    for check in busy:
        for cause_id in follows(check.id):
            root = next((found for found in checks if found.id == cause_id and found.status in ("warn", "fail")
                         and found.gpu_uuid == check.gpu_uuid), None)
            if root is not None:
                check.because = root.id
                break

    def root_of(probe: str, uuid: Optional[str]) -> Optional[Check]:
        return next((check for check in busy if check.probe == probe and uuid in (None, check.gpu_uuid)), None)

    for check in checks:
        if check.id.endswith(BUSY_SUFFIX):
            continue
        named = check.because.endswith(BUSY_SUFFIX)
        unfinished = check.id == check.probe + PROBE_STATUS_SUFFIX and check.status in ("warn", "error") and not check.because
        if not (named or unfinished):
            continue
        root = root_of(check.because[:-len(BUSY_SUFFIX)] if named else check.probe, check.gpu_uuid)
        if root is None and named:
            root = root_of(check.because[:-len(BUSY_SUFFIX)], None)
        if root is not None:
            check.because = root.because or root.id
