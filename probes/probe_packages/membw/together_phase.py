"""membw's together phase: a copy worker on every GPU at once (probelib.measure.together), the alone phase's headline
repeats as the reference, timed again alone at a worker's size where the alone phase's largest size differs from it."""
from __future__ import annotations

from typing import Any, Dict, List

from probe_packages.membw.device_run import DeviceRun
from probe_packages.membw.together import AT_WORKER_SIZE, TASK, at_size, headline_reference, sizes_without_reference
from probelib.fields import is_unavailable, unavailable
from probelib.measure.together import not_needed, plan_workers, run_together

# Each worker imports torch, starts CUDA, checks one copy and calibrates before the start line (seconds), then times
# `repeats` copies of about target_point_ms each, slower by the workers sharing its device: minutes are far beyond it.
DEADLINE_S = 240.0


def together_phase(torch: Any, devices: List[Dict[str, Any]], alone_entries: List[Dict[str, Any]], plan: Dict[str, Any],
                   workers_per_gpu: int) -> Dict[str, Any]:
    """data["together"]: unavailable with the reason when fewer than two workers would run, else the runner's record
    (each worker's result names its device) with the alone reference."""
    workers = plan_workers(devices, workers_per_gpu)
    reason = not_needed(workers)
    if reason is not None:
        return unavailable(reason)
    record = run_together(TASK, {"plan": plan}, workers, DEADLINE_S, devices)
    record["alone_reference"] = reference(torch, devices, alone_entries, plan, record["workers"])
    return record


def reference(torch: Any, devices: List[Dict[str, Any]], alone_entries: List[Dict[str, Any]], plan: Dict[str, Any],
              workers: List[Dict[str, Any]]) -> Dict[str, Any]:
    """The first alone device's headline repeats, and the same timed alone at each size an ok worker copied that the
    headline repeats did not (other_sizes), so that every worker is compared at its own size."""
    if not alone_entries:
        return unavailable("no device was measured alone")
    found = headline_reference(alone_entries[0])
    if is_unavailable(found):
        return found
    device = next(device for device in devices if device["index"] == found["device_index"])
    others = []
    for size in sizes_without_reference(found, workers):
        run = DeviceRun(torch, device, plan, None)
        point = run.measure_point(size)
        if point["status"] != "measured":
            others.append({"buffer_mib": size, "bandwidth_gbps": unavailable(point["reason"]), "source": AT_WORKER_SIZE})
            continue
        try:
            others.append(at_size(run.repeats(point)))
        except Exception as exc:  # the other references and the together record stand
            others.append({"buffer_mib": size, "bandwidth_gbps": unavailable("%s: %s" % (type(exc).__name__, exc)),
                           "source": AT_WORKER_SIZE})
    if others:
        found["other_sizes"] = others
    return found
