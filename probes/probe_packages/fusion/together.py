"""fusion's together phase as data (no torch): the size every worker runs, the phase's deadline, each worker's headline
numbers and the alone phase's reference.

Each worker runs its device run (probe_packages.fusion.device_run) at one size: the largest the alone phase measured on the
first device, or, where that does not fit the worker's share of the device, the largest planned size that does. Its
headline numbers are those of that size: the achieved bandwidth of each version and the measured speed-up.
"""
from __future__ import annotations

from typing import Any, Dict, List, Optional

from probelib.fields import is_unavailable, unavailable
from probelib.measure.together import not_needed, plan_workers, run_together
from probelib.measure.together_outcome import PHASE_FAILED, failed_workers, guarded

TASK = "probe_packages.fusion.together_worker:fusion_worker"
# Process start, torch import and one compile (seconds on a GPU, up to a minute on a busy CPU) before the start line.
PREPARE_ALLOWANCE_S = 150.0
HEADLINE_KEYS = ("unfused_achieved_gbps", "fused_achieved_gbps", "unfused_time_per_iteration_s",
                 "fused_time_per_iteration_s", "measured_speedup")


def headline(point: Dict[str, Any]) -> Dict[str, Any]:
    """The headline numbers of one size's point: each version's achieved GB/s and time per iteration, the speed-up."""
    found: Dict[str, Any] = {"elements": point["elements"]}
    for version in ("unfused", "fused"):
        record = point.get(version)
        for key in ("achieved_gbps", "time_per_iteration_s"):
            if isinstance(record, dict) and key in record:
                value = record[key]
            else:
                value = record if is_unavailable(record) else unavailable("not measured")
            found["%s_%s" % (version, key)] = value
    found["measured_speedup"] = point.get("measured_speedup", unavailable("not measured"))
    return found


def largest_measured(devices: List[Dict[str, Any]]) -> Optional[Dict[str, Any]]:
    """The largest measured point of the first alone device, or None."""
    first = next((entry for entry in devices if isinstance(entry, dict)), None)
    points = [point for point in (first or {}).get("points") or [] if point.get("status") == "measured"]
    return max(points, key=lambda point: point["elements"]) if points else None


def alone_reference(devices: List[Dict[str, Any]]) -> Dict[str, Any]:
    """{"device_index", "elements", headline numbers}: the first alone device's largest measured size."""
    first = next((entry for entry in devices if isinstance(entry, dict)), None)
    index = first["device"]["index"] if first else 0
    point = largest_measured(devices)
    if point is None:
        why = unavailable("the alone phase measured no size on device %d" % index)
        return dict({"device_index": index, "elements": why}, **{key: why for key in HEADLINE_KEYS})
    return dict(headline(point), device_index=index)


def worker_args(plan: Dict[str, Any], params: Dict[str, Any], devices: List[Dict[str, Any]]) -> Dict[str, Any]:
    point = largest_measured(devices)
    return {"plan": plan, "elements": point["elements"] if point else max(plan["sizes_elements"]),
            "membw_bandwidth_gbps": params["membw_bandwidth_gbps"], "membw_bandwidth_source": params["membw_bandwidth_source"]}


def deadline_s(plan: Dict[str, Any], workers_on_device: int) -> float:
    """The preparation, then the two versions' calibration and repeats (a few times the target each), per sharer."""
    timed_s = 2 * (plan["repeats"] + 3) * plan["target_point_ms"] / 1000.0
    return PREPARE_ALLOWANCE_S + 10.0 * timed_s * max(1, workers_on_device)


def together_phase(devices: List[Dict[str, Any]], plan: Dict[str, Any], params: Dict[str, Any],
                   alone: List[Dict[str, Any]]) -> Dict[str, Any]:
    """data["together"]: every device at once with the alone reference, or {"unavailable": why}."""
    workers = plan_workers(devices, int(params["workers_per_gpu"]))
    reason = not_needed(workers)
    if reason is not None:
        return unavailable(reason)
    args = worker_args(plan, params, alone)
    record = run_together(TASK, args, workers, deadline_s(plan, max(worker.workers_on_device for worker in workers)),
                          devices=devices)
    record["alone_reference"] = alone_reference(alone)
    return record


def guarded_phase(devices: List[Dict[str, Any]], plan: Dict[str, Any], params: Dict[str, Any],
                  alone: List[Dict[str, Any]]) -> Dict[str, Any]:
    """data["together"]; a phase that raises is unavailable with its words (together_entries makes it an error of the
    probe), and the alone results stand."""
    return guarded(lambda: together_phase(devices, plan, params, alone))[0]


def worker_errors(failed: List[Dict[str, Any]]) -> List[Dict[str, Any]]:
    """The errors list's entries of together_entries' failed workers (or failed phase)."""
    return [{"device": "%s:%d" % (entry["device"]["kind"], entry["device"]["index"]),
             "error": "%s: %s" % (entry["device"]["name"], entry["error"]["message"])} for entry in failed]


def together_entries(together: Dict[str, Any], kind: str = "cuda", index: int = 0) -> List[Dict[str, Any]]:
    """Each failed worker, or the phase that raised (named after the first device, ``kind``:``index``), as a device
    entry (probelib.device_outcome): it makes the probe partial."""
    if is_unavailable(together) and together["unavailable"].startswith(PHASE_FAILED):
        return [{"device": {"kind": kind, "index": index, "name": "together phase"}, "status": "error",
                 "error": {"message": together["unavailable"][len(PHASE_FAILED):]}, "problems": []}]
    return [{"device": {"kind": entry["kind"], "index": entry["device_index"], "name": "together worker %d" % entry["worker"]},
             "status": "error", "error": {"message": entry.get("error", "failed")}, "problems": []}
            for entry in failed_workers(together)]
