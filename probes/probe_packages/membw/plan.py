"""The membw plan: the check across parameters, the size list per device kind, what fits in memory, iterations per point."""
from __future__ import annotations

from typing import Any, Dict, Tuple

from probelib.measure.timing import point_timing_plan
from probelib.params import require

MIB = 1 << 20
GPU_SIZES_MIB = [4, 16, 64, 256, 1024, 4096]
CPU_SIZES_MIB = [1, 4, 16, 64, 256]
DTYPES = {"float32": 4, "uint8": 1}


def check_params(params: Dict[str, Any]) -> None:
    """What the spec (params.json) cannot say: a check across parameters."""
    require(params["max_iterations"] >= params["min_iterations"], "max_iterations must be >= min_iterations")


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
        **point_timing_plan(params, quick),
        "tolerance_pct": float(params["tolerance_pct"]),
        "min_plateau_points": params["min_plateau_points"],
        "l2_multiple": float(params["l2_multiple"]),
        "cv_warn_pct": float(params["cv_warn_pct"]),
        "safety_margin_mib": float(params["safety_margin_mib"]),
        "safety_margin_pct": float(params["safety_margin_pct"]),
        "verify_sample_elements": params["verify_sample_elements"],
        "alone_devices": params["alone_devices"],
        "workers_per_gpu": params["workers_per_gpu"],
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


def bandwidth_gbps(buffer_bytes: int, seconds_per_copy: float) -> float:
    """GB/s (1e9 bytes) counting the bytes read plus the bytes written: 2 x the buffer per copy."""
    return 2.0 * buffer_bytes / seconds_per_copy / 1e9
