"""gemm: matmul throughput per dtype over shapes, each on the roofline, burst and sustained at the power limit.

Its roofline needs the memory bandwidth membw measured on each GPU and the dense peak of each dtype from the SKU's
baseline: both are derived on the controller from this run's stored results, as the core hands them (membw's result as
membw gives it, run.py: needs=("membw",); the SKU identified from the machine's probe, with its baseline). A
parameter the user gave in the inventory always wins; when nothing can be derived the probe measures or calibrates
itself.
"""
from __future__ import annotations

from typing import Any, Dict, List, Mapping, Optional, Tuple

from ...probe_kit.kit import Handed

GEMM_PEAK_KEYS = {"fp32": "fp32", "tf32": "tf32_dense", "bf16": "bf16_dense", "fp16": "fp16_dense", "fp8_e4m3": "fp8_dense"}


def baseline_peaks(baseline: Optional[Mapping[str, Any]]) -> Dict[str, float]:
    """The dense peaks of each dtype in a SKU's baseline ({} for none)."""
    datasheet = (baseline or {}).get("datasheet") or {}
    return {dtype: float(datasheet[key]["value"]) for dtype, key in GEMM_PEAK_KEYS.items()
            if isinstance(datasheet.get(key), dict) and isinstance(datasheet[key].get("value"), (int, float))}


def gemm_inputs(params: Dict[str, Any], handed: Handed) -> Tuple[Dict[str, Any], List[str]]:
    derived, notes = {}, []
    if "memory_bandwidth_gbps" not in params:
        membw = handed.given("membw")
        if membw is not None and membw["bandwidth_gbps"]:
            derived["memory_bandwidth_gbps"] = membw["bandwidth_gbps"]
            notes.append("memory_bandwidth_gbps from this run's membw result")
    if "peak_tflops" not in params:
        host = handed.host_sku()
        peaks = baseline_peaks(host.baseline)
        if peaks:
            derived["peak_tflops"] = peaks
            notes.append("peak_tflops from baselines/%s.yaml (SKU identified from this run's %s result)" % (host.sku, host.source))
    return dict(params, **derived), notes


# The calibration shape's rate in each named state, each its own metric: a shape sweep's best mixes the two states.
