"""gemm: matmul throughput per dtype over shapes, each on the roofline, burst and sustained at the power limit.

Its roofline needs the memory bandwidth membw measured on each GPU and the dense peak of each dtype from the SKU's
baseline: both are derived on the controller from this run's stored results. A parameter the user gave in the
inventory always wins; when nothing can be derived the probe measures or calibrates itself.
"""
from __future__ import annotations

import json
import os
from typing import Any, Dict, List, Tuple

from ...module_utils.envelope_statuses import MEASURED_STATUSES
from ..judge.measurement_checks import GEMM_CHECKS
from ..judge.metrics import gemm_metrics
from ..judge.sku import identify_host
from ..report_measurements import gemm_view
from ..rules_and_baselines import load_baselines
from .declaration import ProbeDeclaration, ProbeSection

GEMM_PEAK_KEYS = {"fp32": "fp32", "tf32": "tf32_dense", "bf16": "bf16_dense", "fp16": "fp16_dense", "fp8_e4m3": "fp8_dense"}


def _stored_data(host_path: str, probe: str) -> Any:
    try:
        with open(os.path.join(host_path, probe + ".json"), encoding="utf-8") as handle:
            envelope = json.load(handle)
    except (OSError, ValueError):
        return None
    if isinstance(envelope, dict) and envelope.get("status") in MEASURED_STATUSES and isinstance(envelope.get("data"), dict):
        return envelope["data"]
    return None


def membw_bandwidth_by_gpu(membw_data: Any) -> Dict[str, float]:
    found = {}
    for entry in (membw_data or {}).get("devices") or []:
        device = entry.get("device") if isinstance(entry, dict) and isinstance(entry.get("device"), dict) else {}
        headline = entry.get("headline") if isinstance(entry, dict) and isinstance(entry.get("headline"), dict) else {}
        value = headline.get("bandwidth_gbps")
        key = device.get("uuid") if device.get("kind") == "cuda" else "cpu"
        if isinstance(key, str) and isinstance(value, (int, float)) and not isinstance(value, bool):
            found[key] = float(value)
    return found


def baseline_peaks(health_data: Any, baselines: List[dict]) -> Tuple[Dict[str, float], str]:
    if not isinstance(health_data, dict):
        return {}, ""
    sku, unused_reason, unused_per_gpu = identify_host(health_data.get("gpus"), baselines)
    baseline = next((candidate for candidate in baselines if candidate.get("id") == sku), None)
    if baseline is None:
        return {}, ""
    datasheet = baseline.get("datasheet") or {}
    peaks = {dtype: float(datasheet[key]["value"]) for dtype, key in GEMM_PEAK_KEYS.items()
             if isinstance(datasheet.get(key), dict) and isinstance(datasheet[key].get("value"), (int, float))}
    return peaks, sku


def gemm_inputs(host_path: str, params: Dict[str, Any]) -> Tuple[Dict[str, Any], List[str]]:
    derived, notes = {}, []
    if "memory_bandwidth_gbps" not in params:
        bandwidths = membw_bandwidth_by_gpu(_stored_data(host_path, "membw"))
        if bandwidths:
            derived["memory_bandwidth_gbps"] = bandwidths
            notes.append("memory_bandwidth_gbps from this run's membw result")
    if "peak_tflops" not in params:
        baselines, unused_problems = load_baselines()
        peaks, sku = baseline_peaks(_stored_data(host_path, "health"), baselines)
        if peaks:
            derived["peak_tflops"] = peaks
            notes.append("peak_tflops from baselines/%s.yaml (SKU identified from this run's health result)" % sku)
    return dict(params, **derived), notes


DECLARATION = ProbeDeclaration(
    name="gemm",
    run_order=40,
    timeout_s=900,
    profiles={"acceptance": {}, "full": {}},
    checks=GEMM_CHECKS,
    metrics=gemm_metrics,
    section=ProbeSection(gemm_view),
    derived_params=gemm_inputs,
    summary="matmul throughput per dtype over shapes on the roofline, burst and sustained at the power limit",
)
