"""The membw plan: parameters checked, the size list per device kind, what fits in memory, iterations per point."""
from __future__ import annotations

import math
from typing import Any, Dict, Tuple

from probelib.runner import ParameterError

MIB = 1 << 20
GPU_SIZES_MIB = [4, 16, 64, 256, 1024, 4096]
CPU_SIZES_MIB = [1, 4, 16, 64, 256]
DTYPES = {"float32": 4, "uint8": 1}
DEVICE_REQUESTS = ("auto", "cuda", "cpu")


def _require(condition: bool, message: str) -> None:
    if not condition:
        raise ParameterError(message)


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def check_params(params: Dict[str, Any]) -> None:
    """Refuse values the runner's type check lets through (e.g. 2.5 iterations, a negative tolerance)."""
    _require(params["device"] in DEVICE_REQUESTS, "device must be one of %s" % ", ".join(DEVICE_REQUESTS))
    _require(params["dtype"] in DTYPES, "dtype must be one of %s" % ", ".join(sorted(DTYPES)))
    sizes = params["sizes_mib"]
    _require(all(_is_int(size) and size >= 1 for size in sizes), "sizes_mib must be whole MiB >= 1")
    for key, lowest in (("warmup_iterations", 0), ("min_iterations", 1), ("max_iterations", 1), ("repeats", 1),
                        ("min_plateau_points", 1), ("verify_sample_elements", 1)):
        _require(_is_int(params[key]) and params[key] >= lowest, "%s must be an integer >= %d" % (key, lowest))
    _require(params["max_iterations"] >= params["min_iterations"], "max_iterations must be >= min_iterations")
    for key in ("target_point_ms", "quick_target_point_ms", "tolerance_pct", "cv_warn_pct", "l2_multiple",
                "safety_margin_mib", "safety_margin_pct"):
        _require(math.isfinite(params[key]) and params[key] >= 0, "%s must be a finite number >= 0" % key)
    _require(params["target_point_ms"] > 0 and params["quick_target_point_ms"] > 0, "target times must be > 0")
    _require(params["safety_margin_pct"] < 100, "safety_margin_pct must be < 100")


def resolve_plan(params: Dict[str, Any], kind: str) -> Dict[str, Any]:
    """The plan that runs on a device of ``kind`` (cuda / cpu), recorded in the data as it ran."""
    if params["sizes_mib"]:
        name, sizes = "custom", sorted(set(params["sizes_mib"]))
    elif kind == "cuda":
        name, sizes = "gpu-default", list(GPU_SIZES_MIB)
    else:
        name, sizes = "cpu-default", list(CPU_SIZES_MIB)
    quick = bool(params["quick"])
    return {
        "name": name + ("-quick" if quick else ""),
        "quick": quick,
        "device_request": params["device"],
        "sizes_mib": sizes,
        "dtype": params["dtype"],
        "element_bytes": DTYPES[params["dtype"]],
        "target_point_ms": float(params["quick_target_point_ms"] if quick else params["target_point_ms"]),
        "warmup_iterations": params["warmup_iterations"],
        "min_iterations": params["min_iterations"],
        "max_iterations": params["max_iterations"],
        "repeats": params["repeats"],
        "tolerance_pct": float(params["tolerance_pct"]),
        "min_plateau_points": params["min_plateau_points"],
        "l2_multiple": float(params["l2_multiple"]),
        "cv_warn_pct": float(params["cv_warn_pct"]),
        "safety_margin_mib": float(params["safety_margin_mib"]),
        "safety_margin_pct": float(params["safety_margin_pct"]),
        "verify_sample_elements": params["verify_sample_elements"],
    }


def margin_bytes(free_bytes: int, safety_margin_mib: float, safety_margin_pct: float) -> int:
    return int(max(safety_margin_mib * MIB, free_bytes * safety_margin_pct / 100.0))


def fits(size_mib: int, free_bytes: int, safety_margin_mib: float, safety_margin_pct: float) -> Tuple[bool, str]:
    """Do two buffers of ``size_mib`` fit in ``free_bytes`` with the margin? (yes/no, and the sums in words)."""
    needed = 2 * size_mib * MIB
    margin = margin_bytes(free_bytes, safety_margin_mib, safety_margin_pct)
    if needed + margin <= free_bytes:
        return True, ""
    return False, ("two buffers of %d MiB (%d MiB) plus a safety margin of %d MiB exceed the %d MiB free"
                   % (size_mib, needed // MIB, margin // MIB, free_bytes // MIB))


def iterations_for(target_s: float, per_iteration_s: float, min_iterations: int, max_iterations: int) -> int:
    """How many back-to-back copies make a point last about ``target_s``, clamped to [min, max]."""
    if per_iteration_s <= 0 or not math.isfinite(per_iteration_s):
        return max_iterations
    wanted = int(round(target_s / per_iteration_s))
    return max(min_iterations, min(max_iterations, wanted))


def bandwidth_gbps(buffer_bytes: int, seconds_per_copy: float) -> float:
    """GB/s (1e9 bytes) counting the bytes read plus the bytes written: 2 x the buffer per copy."""
    return 2.0 * buffer_bytes / seconds_per_copy / 1e9
