"""The fusion plan: the check across parameters, sizes and dtype per device kind, what fits in memory, the membw reference."""
from __future__ import annotations

from typing import Any, Dict, Optional, Tuple

from probelib.measure.timing import point_timing_plan
from probelib.params import require

MIB = 1 << 20
# Launch-bound at the small end, bandwidth-bound at the large end; the CPU's sizes are much smaller.
GPU_SIZES_ELEMENTS = [1 << 20, 1 << 22, 1 << 24, 1 << 26, 1 << 28]
CPU_SIZES_ELEMENTS = [1 << 12, 1 << 15, 1 << 18, 1 << 21]
GPU_QUICK_SIZES_ELEMENTS = [1 << 20, 1 << 26]
CPU_QUICK_SIZES_ELEMENTS = [1 << 12, 1 << 18]
DTYPES = {"bfloat16": 2, "float16": 2, "float32": 4}
AUTO_DTYPE = {"cuda": "bfloat16", "cpu": "float32"}
# x, a, b, c, the three intermediates and y are alive at once in the unfused chain, the fused y beside them for the check.
LIVE_TENSORS = 9
NO_MEMBW = ("membw_bandwidth_gbps was not given: no membw result of this run was handed over (run membw before fusion "
            "in the same run, as the acceptance and full profiles do)")


def check_params(params: Dict[str, Any]) -> None:
    """What the spec (params.json) cannot say: a check across parameters."""
    require(params["max_iterations"] >= params["min_iterations"], "max_iterations must be >= min_iterations")


def resolve_plan(params: Dict[str, Any], kind: str) -> Dict[str, Any]:
    """The plan that runs on a device of ``kind`` (cuda / cpu), recorded in the data as it ran."""
    quick = bool(params["quick"])
    if params["sizes_elements"]:
        name, sizes = "custom", sorted(set(params["sizes_elements"]))
    elif kind == "cuda":
        name, sizes = "gpu-default", list(GPU_QUICK_SIZES_ELEMENTS if quick else GPU_SIZES_ELEMENTS)
    else:
        name, sizes = "cpu-default", list(CPU_QUICK_SIZES_ELEMENTS if quick else CPU_SIZES_ELEMENTS)
    dtype = AUTO_DTYPE[kind] if params["dtype"] == "auto" else params["dtype"]
    return {
        "name": name + ("-quick" if quick else ""),
        "quick": quick,
        "device_request": params["device"],
        "sizes_elements": sizes,
        "dtype": dtype,
        "element_bytes": DTYPES[dtype],
        "compile": bool(params["compile"]),
        **point_timing_plan(params, quick),
        "speedup_tolerance_pct": float(params["speedup_tolerance_pct"]),
        "bandwidth_bound_pct": float(params["bandwidth_bound_pct"]),
        "safety_margin_mib": float(params["safety_margin_mib"]),
        "safety_margin_pct": float(params["safety_margin_pct"]),
    }


def fits(elements: int, element_bytes: int, free_bytes: int, safety_margin_mib: float,
         safety_margin_pct: float) -> Tuple[bool, str]:
    """Do the chain's live tensors fit in ``free_bytes`` with the margin? (yes/no, and the sums in words)."""
    needed = LIVE_TENSORS * elements * element_bytes
    margin = int(max(safety_margin_mib * MIB, free_bytes * safety_margin_pct / 100.0))
    if needed + margin <= free_bytes:
        return True, ""
    return False, ("%d tensors of %d elements (%d MiB) plus a safety margin of %d MiB exceed the %d MiB free"
                   % (LIVE_TENSORS, elements, needed // MIB, margin // MIB, free_bytes // MIB))


def membw_reference(given: Any, source: str, kind: str, uuid: Any) -> Tuple[Optional[float], str]:
    """(the membw bandwidth for this device or None, where it came from or why there is none)."""
    if given is None:
        return None, source or NO_MEMBW
    if not isinstance(given, dict):
        return float(given), source or "membw_bandwidth_gbps given as one number for every device"
    key = uuid if kind == "cuda" else "cpu"
    if isinstance(key, str) and key in given:
        return float(given[key]), source or "membw_bandwidth_gbps given for %s" % key
    return None, ("membw_bandwidth_gbps has no entry for %s (it names %s)" % (
        key if isinstance(key, str) else "this device (no UUID)", ", ".join(sorted(given)) or "nothing"))
