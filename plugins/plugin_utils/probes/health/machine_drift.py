"""health's drift checks of the machine against an earlier run's: the GPU set (drift.gpus) and the device nodes'
majors (drift.device_majors), its settings' drift between them. Pure Python."""
from __future__ import annotations

from typing import Any, Dict, List, Sequence

from ...probe_kit.kit import GpuDescriptor, MachineFacts, Check

DRIFT_CHECK_IDS = ("drift.gpus", "drift.device_majors")


def _check(check_id: str, host: str, probe: str, status: str, reason: str, **fields: Any) -> Check:
    return Check(id=check_id, host=host, probe=probe, status=status, reason=reason, **fields)


def _uuids_by_index(gpus: Sequence[GpuDescriptor]) -> Dict[Any, str]:
    return {gpu.index: gpu.uuid for gpu in gpus if isinstance(gpu.index, int) and isinstance(gpu.uuid, str)}


def gpu_set_drift(host: str, probe: str, current: MachineFacts, earlier: MachineFacts, earlier_run: str) -> List[Check]:
    """drift.gpus: the GPUs by UUID and index against an earlier run's: one swapped, re-enumerated, missing or new."""
    if current.gpus is None or earlier.gpus is None:
        return [_check("drift.gpus", host, probe, "skip", "the GPU list is unavailable in this run or in run %s" % earlier_run)]
    now, before = _uuids_by_index(current.gpus), _uuids_by_index(earlier.gpus)
    now_index = {uuid: index for index, uuid in now.items()}
    before_index = {uuid: index for index, uuid in before.items()}
    checks = []
    for index in sorted(set(now) | set(before)):
        old, new = before.get(index), now.get(index)
        if old == new:
            continue
        fields = {"gpu_index": index, "gpu_uuid": new or old, "value": new, "reference": old, "reference_source": "run %s" % earlier_run}
        if old and new:
            if new in before_index:
                words = "GPU %d was %s in run %s, now %s (which was GPU %d): re-enumerated" % (index, old, earlier_run, new, before_index[new])
            else:
                words = "GPU %d was %s in run %s, now %s: swapped" % (index, old, earlier_run, new)
            checks.append(_check("drift.gpus", host, probe, "warn", words + "; confirm the change was intended", **fields))
        elif old and old not in now_index:
            checks.append(_check("drift.gpus", host, probe, "fail", "GPU %d (%s) was present in run %s and is missing now"
                                 % (index, old, earlier_run), **fields))
        elif new and new not in before_index:
            checks.append(_check("drift.gpus", host, probe, "warn", "GPU %d (%s) is new since run %s" % (index, new, earlier_run), **fields))
    if not checks:
        checks.append(_check("drift.gpus", host, probe, "pass", "the same %d GPUs (by UUID and index) as in run %s"
                             % (len(now), earlier_run), value=len(now), reference=len(before), reference_source="run %s" % earlier_run))
    return checks


def device_major_drift(host: str, probe: str, current: MachineFacts, earlier: MachineFacts, earlier_run: str) -> List[Check]:
    """drift.device_majors. The incident this tool exists for: a kernel upgrade moved /dev/nvidia-uvm from major 504 to 509."""
    now, before = current.device_majors, earlier.device_majors
    if now is None or before is None:
        return [_check("drift.device_majors", host, probe, "skip", "device majors not comparable with run %s: not listed in %s"
                       % (earlier_run, "this run" if now is None else "that run"))]
    changed = ["%s %d -> %d" % (path, before[path], now[path]) for path in sorted(set(now) & set(before)) if now[path] != before[path]]
    gone = sorted(set(before) - set(now))
    new = sorted(set(now) - set(before))
    words = "; ".join(part for part in (
        "major changed: %s" % ", ".join(changed) if changed else "",
        "gone: %s" % ", ".join(gone) if gone else "", "new: %s" % ", ".join(new) if new else "") if part)
    fields = {"value": ", ".join("%s %d" % item for item in sorted(now.items())) or "none",
              "reference": ", ".join("%s %d" % item for item in sorted(before.items())) or "none",
              "reference_source": "run %s" % earlier_run, "threshold": "unchanged"}
    if changed or gone or new:
        return [_check("drift.device_majors", host, probe, "warn", "device nodes changed since run %s: %s; a container or "
                       "cgroup rule written for the old numbers no longer matches (health.device_majors and "
                       "health.cgroup_devices say whether this host still works)" % (earlier_run, words), **fields)]
    return [_check("drift.device_majors", host, probe, "pass", "the same %d device nodes and majors as in run %s"
                   % (len(now), earlier_run), **fields)]


def machine_drift(host: str, probe: str, current: MachineFacts, earlier: MachineFacts, earlier_run: str,
                  settings_checks: List[Check]) -> List[Check]:
    """The machine's drift since earlier_run, its settings' drift checks (settings_checks) between the GPU set's and the
    device nodes'."""
    return (gpu_set_drift(host, probe, current, earlier, earlier_run) + list(settings_checks)
            + device_major_drift(host, probe, current, earlier, earlier_run))
