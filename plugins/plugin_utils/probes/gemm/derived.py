"""gemm: matmul throughput per dtype over shapes, each on the roofline, burst and sustained at the power limit.

Its roofline needs the memory bandwidth membw measured on each GPU and the dense peak of each dtype from the SKU's
baseline: both are derived on the controller from this run's stored results, the baselines as the core hands them. A
parameter the user gave in the inventory always wins; when nothing can be derived the probe measures or calibrates
itself.
"""
from __future__ import annotations

from typing import Any, Dict, List, Tuple

from ...judge.sku import identify_host
from ...store.read import measured_data
from ...probe_kit.declaration import Baselines
from ...probe_kit.registry import machine
from ..membw.judging import membw_headlines

GEMM_PEAK_KEYS = {"fp32": "fp32", "tf32": "tf32_dense", "bf16": "bf16_dense", "fp16": "fp16_dense", "fp8_e4m3": "fp8_dense"}


def membw_bandwidth_by_gpu(membw_data: Any) -> Dict[str, float]:
    """{GPU UUID: membw's headline bandwidth}, from membw's measurements; the CPU path's is keyed "cpu"."""
    return membw_headlines(membw_data)[0]


def baseline_peaks(machine_data: Any, baselines: List[dict]) -> Tuple[Dict[str, float], str]:
    """The dense peaks of the SKU identified from the GPUs of machine_data (the data of the probe that describes the
    machine), and the SKU."""
    described = machine()
    if not isinstance(machine_data, dict) or described is None:
        return {}, ""
    sku, unused_reason, unused_per_gpu = identify_host(described.declaration.facts(machine_data).gpus, baselines)
    baseline = next((candidate for candidate in baselines if candidate.get("id") == sku), None)
    if baseline is None:
        return {}, ""
    datasheet = baseline.get("datasheet") or {}
    peaks = {dtype: float(datasheet[key]["value"]) for dtype, key in GEMM_PEAK_KEYS.items()
             if isinstance(datasheet.get(key), dict) and isinstance(datasheet[key].get("value"), (int, float))}
    return peaks, sku


def gemm_inputs(host_path: str, params: Dict[str, Any], baselines: Baselines) -> Tuple[Dict[str, Any], List[str]]:
    derived, notes = {}, []
    if "memory_bandwidth_gbps" not in params:
        bandwidths = membw_bandwidth_by_gpu(measured_data(host_path, "membw"))
        if bandwidths:
            derived["memory_bandwidth_gbps"] = bandwidths
            notes.append("memory_bandwidth_gbps from this run's membw result")
    if "peak_tflops" not in params:
        described = machine()
        peaks, sku = baseline_peaks(measured_data(host_path, described.probe), baselines()) if described is not None else ({}, "")
        if peaks:
            derived["peak_tflops"] = peaks
            notes.append("peak_tflops from baselines/%s.yaml (SKU identified from this run's %s result)" % (sku, described.probe))
    return dict(params, **derived), notes


# The calibration shape's rate in each named state, each its own metric: a shape sweep's best mixes the two states.
