"""gemm's together phase as data (no torch): what each worker is asked to run, how long it may take, and the alone
phase's reference it is compared with.

Each worker times the calibration shape's sustained windows of every power-state dtype (on the CPU path, which has no
power states, every dtype of the plan, with the same code and no NVML). The reference is the first alone device's
sustained rate of each dtype; on the CPU its calibration rate, the alone phase's only timing of that shape.
"""
from __future__ import annotations

from typing import Any, Dict, List, Tuple

from probelib.fields import is_unavailable, unavailable
from probelib.measure.together import not_needed, plan_workers, run_together
from probelib.measure.together_outcome import failed_workers, failure_words, guarded

TASK = "probe_packages.gemm.together_worker:sustained_worker"
# Process start, torch import, NVML, the operands and one warm-up call per dtype, before the start line.
PREPARE_ALLOWANCE_S = 120.0
CPU_REFERENCE = ("the CPU path has no power states: the reference is the alone phase's calibration rate of the same "
                 "shape, and each worker runs the sustained method's settle and windows without NVML")


def together_dtypes(plan: Dict[str, Any], kind: str) -> List[str]:
    """The dtypes each worker times: the power-state dtypes on a GPU, every dtype of the plan on the CPU."""
    return list(plan["dtypes"]) if kind == "cpu" else list(plan.get("power_state_dtypes") or [])


def worker_args(plan: Dict[str, Any], params: Dict[str, Any], kind: str) -> Dict[str, Any]:
    """The JSON-able arguments every worker gets: the shape, the dtypes, the sustained settings and repeats."""
    return {"case": plan["calibration_case"].as_dict(), "dtypes": together_dtypes(plan, kind),
            "settings": dict(plan["power_state_settings"]), "repeats": int(params["repeats"]),
            "fp8_fast_accum": bool(params["fp8_fast_accum"])}


def deadline_s(args: Dict[str, Any], workers_on_device: int) -> float:
    """How long the phase may take: the preparation, then per dtype the settle and the windows, with room for workers
    that share a device (their calls take longer, their windows do not)."""
    settings = args["settings"]
    per_dtype = settings["sustained_settle_s"] + args["repeats"] * settings["sustained_window_s"] + 5.0
    return PREPARE_ALLOWANCE_S + 2.0 * len(args["dtypes"]) * per_dtype * max(1, workers_on_device)


def _reference_rate(entry: Dict[str, Any], dtype: str) -> Any:
    rate = (entry.get("dtypes") or {}).get(dtype) if isinstance(entry.get("dtypes"), dict) else None
    if not isinstance(rate, dict) or is_unavailable(rate):
        why = rate["unavailable"] if is_unavailable(rate) else "the alone phase did not time it"
        return unavailable("no alone %s rate: %s" % (dtype, why))
    if entry["device"].get("kind") == "cpu":
        held = rate.get("calibration")
    else:
        states = rate.get("power_states")
        held = states if is_unavailable(states) else (states or {}).get("sustained")
    if not isinstance(held, dict) or "tflops" not in held:
        why = held["unavailable"] if is_unavailable(held) else "not recorded"
        return unavailable("no alone %s rate: %s" % (dtype, why))
    return {"tflops": held["tflops"]}


def alone_reference(devices: List[Dict[str, Any]], dtypes: List[str]) -> Dict[str, Any]:
    """{"device_index", "source", "sustained": {dtype: {"tflops"} or unavailable}} from the first alone device."""
    first = next((entry for entry in devices if isinstance(entry, dict) and isinstance(entry.get("device"), dict)), None)
    if first is None:
        return {"device_index": 0, "source": "no device ran alone",
                "sustained": {dtype: unavailable("no device ran alone") for dtype in dtypes}}
    cpu = first["device"].get("kind") == "cpu"
    return {"device_index": first["device"]["index"],
            "source": CPU_REFERENCE if cpu else "the alone phase's sustained windows of the calibration shape on this device",
            "sustained": {dtype: _reference_rate(first, dtype) for dtype in dtypes}}


def together_phase(devices: List[Dict[str, Any]], plan: Dict[str, Any], params: Dict[str, Any],
                   alone: List[Dict[str, Any]]) -> Dict[str, Any]:
    """data["together"]: every device at once, ``workers_per_gpu`` workers each, with the alone reference; or
    {"unavailable": why} where it is not needed (one worker) or has nothing to time."""
    workers = plan_workers(devices, int(params["workers_per_gpu"]))
    reason = not_needed(workers)
    if reason is not None:
        return unavailable(reason)
    args = worker_args(plan, params, devices[0]["kind"])
    if not args["dtypes"]:
        return unavailable("no dtype to time together: power_state_dtypes names none of the plan's dtypes")
    record = run_together(TASK, args, workers, deadline_s(args, max(worker.workers_on_device for worker in workers)),
                          devices=devices)
    record["alone_reference"] = alone_reference(alone, args["dtypes"])
    return record


def guarded_phase(devices: List[Dict[str, Any]], plan: Dict[str, Any], params: Dict[str, Any],
                  alone: List[Dict[str, Any]]) -> Tuple[Dict[str, Any], List[Dict[str, Any]]]:
    """(data["together"], the errors it adds): a phase that raises is unavailable with its words and one error, and
    the alone results stand."""
    record, failure = guarded(lambda: together_phase(devices, plan, params, alone))
    if failure is not None:
        return record, [{"device_index": devices[0]["index"], "dtype": None, "case": None, "error": "together phase: %s" % failure}]
    return record, worker_errors(record)


def worker_errors(together: Dict[str, Any]) -> List[Dict[str, Any]]:
    """The errors list's entries of the workers that failed (none when the phase did not run)."""
    return [{"device_index": entry["device_index"], "dtype": None, "case": None, "error": failure_words(entry)}
            for entry in failed_workers(together)]
