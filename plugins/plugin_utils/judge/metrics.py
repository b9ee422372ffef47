# -*- coding: utf-8 -*-
# Copyright: gpufleet.validation contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Numbers per probe for fleet comparison and drift.

Each probe's declaration (plugin_utils/probes/<probe>.py) names its function(data) -> list of Metric(metric_id,
gpu_uuid, gpu_index, value, unit, better), better being "higher", "lower" or "none" (which direction is good).
"""
from __future__ import annotations

from typing import Any, Callable, Dict, List, NamedTuple, Optional

from .sku import is_unavailable


class Metric(NamedTuple):
    metric_id: str
    gpu_uuid: Optional[str]
    gpu_index: Optional[int]
    value: float
    unit: str
    better: str


def _number(value: Any) -> Optional[float]:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    return float(value)


def health_metrics(data: Dict[str, Any]) -> List[Metric]:
    """Idle power draw (W), temperature (C) and memory used (MiB) per GPU, CUDA init duration (s) per host."""
    metrics: List[Metric] = []
    gpus = data.get("gpus")
    for gpu in gpus if isinstance(gpus, list) else []:
        uuid = gpu.get("uuid") if isinstance(gpu.get("uuid"), str) else None
        index = gpu.get("index") if isinstance(gpu.get("index"), int) else None
        if uuid is None:
            continue
        for metric_id, section, key, unit in (
                ("health.idle_power_w", "power", "draw_w", "W"),
                ("health.temperature_c", "temperature", "gpu_c", "C"),
                ("health.memory_used_mib", "memory", "used_mib", "MiB")):
            part = gpu.get(section)
            value = _number(part.get(key)) if isinstance(part, dict) and not is_unavailable(part) else None
            if value is not None:
                metrics.append(Metric(metric_id, uuid, index, value, unit, "lower"))
    init = data.get("cuda_init")
    if isinstance(init, dict) and init.get("ok"):
        duration = _number(init.get("duration_s"))
        if duration is not None:
            metrics.append(Metric("health.cuda_init_s", None, None, duration, "s", "lower"))
    return metrics


def hostbw_metrics(data: Dict[str, Any]) -> List[Metric]:
    """Pinned H2D and D2H GB/s per GPU (the CPU path's host-to-host copy is not a GPU metric)."""
    metrics: List[Metric] = []
    devices = data.get("devices")
    for device in devices if isinstance(devices, list) else []:
        if not isinstance(device, dict) or device.get("kind") != "cuda" or not isinstance(device.get("uuid"), str):
            continue
        for result in device.get("results") or []:
            value = _number(result.get("median_gbps")) if isinstance(result, dict) else None
            if value is not None and result.get("host_memory") == "pinned" and result.get("direction") in ("h2d", "d2h"):
                metrics.append(Metric("hostbw.pinned_%s_gbps" % result["direction"], device["uuid"], device.get("index"),
                                      value, "GB/s", "higher"))
    return metrics


def membw_metrics(data: Dict[str, Any]) -> List[Metric]:
    """The headline copy bandwidth (plateau, read + written) per GPU."""
    metrics: List[Metric] = []
    devices = data.get("devices")
    for entry in devices if isinstance(devices, list) else []:
        device = entry.get("device") if isinstance(entry, dict) and isinstance(entry.get("device"), dict) else {}
        headline = entry.get("headline") if isinstance(entry, dict) and isinstance(entry.get("headline"), dict) else {}
        value = _number(headline.get("bandwidth_gbps"))
        if device.get("kind") == "cuda" and isinstance(device.get("uuid"), str) and value is not None:
            metrics.append(Metric("membw.bandwidth_gbps", device["uuid"], device.get("index"), value, "GB/s", "higher"))
    return metrics


GEMM_STATE_METRICS = (("bf16", "burst"), ("bf16", "sustained"), ("fp8_e4m3", "burst"), ("fp8_e4m3", "sustained"))


def gemm_metrics(data: Dict[str, Any]) -> List[Metric]:
    """Per GPU, the calibration shape's burst and sustained rates (median of repeats) for bf16 and fp8: each compared only
    with the same state on peers and in earlier runs (a shape sweep's best mixes the two states)."""
    metrics: List[Metric] = []
    devices = data.get("devices")
    for entry in devices if isinstance(devices, list) else []:
        device = entry.get("device") if isinstance(entry, dict) and isinstance(entry.get("device"), dict) else {}
        rates = entry.get("dtypes") if isinstance(entry, dict) and isinstance(entry.get("dtypes"), dict) else {}
        if device.get("kind") != "cuda" or not isinstance(device.get("uuid"), str):
            continue
        for dtype, method in GEMM_STATE_METRICS:
            rate = rates.get(dtype) if isinstance(rates.get(dtype), dict) else {}
            states = rate.get("power_states") if isinstance(rate.get("power_states"), dict) else {}
            state = states.get(method) if isinstance(states.get(method), dict) else {}
            value = _number(state.get("tflops"))
            if value is not None:
                metrics.append(Metric("gemm.%s_%s_tflops" % (dtype.split("_", maxsplit=1)[0], method), device["uuid"], device.get("index"),
                                      value, "TFLOP/s", "higher"))
    return metrics


def p2p_metrics(data: Dict[str, Any]) -> List[Metric]:
    """The worst pair's unidirectional and bidirectional headline GB/s (host level: the slowest link decides)."""
    metrics: List[Metric] = []
    pairs = [pair for pair in data.get("pairs") or [] if isinstance(pair, dict) and not pair.get("error")]
    for section, metric_id in (("unidirectional", "p2p.worst_pair_gbps"), ("bidirectional", "p2p.worst_pair_bidirectional_gbps")):
        values = [_number((pair.get(section) or {}).get("headline_gbps")) for pair in pairs if isinstance(pair.get(section), dict)]
        values = [value for value in values if value is not None]
        if values:
            metrics.append(Metric(metric_id, None, None, min(values), "GB/s", "higher"))
    return metrics


def load_metrics(data: Dict[str, Any]) -> List[Metric]:
    """Per GPU under the sustained load: the achieved bf16 TFLOP/s (after warm-up), median SM clock, max temperature."""
    metrics: List[Metric] = []
    for gpu in data.get("gpus") or []:
        if not isinstance(gpu, dict) or not isinstance(gpu.get("uuid"), str):
            continue
        load = gpu.get("load") if isinstance(gpu.get("load"), dict) else {}
        active = gpu.get("active") if isinstance(gpu.get("active"), dict) else {}
        for metric_id, value, unit, better in (
                ("load.achieved_tflops", _number(load.get("achieved_tflops_active")), "TFLOP/s", "higher"),
                ("load.sm_clock_mhz", _number((active.get("sm_clock_mhz") or {}).get("median")), "MHz", "higher"),
                ("load.max_temperature_c", _number((active.get("temperature_c") or {}).get("max")), "C", "lower")):
            if value is not None:
                metrics.append(Metric(metric_id, gpu["uuid"], gpu.get("index"), value, unit, better))
    return metrics


def collective_peak_metrics(probe: str) -> Callable[[Dict[str, Any]], List[Metric]]:
    def metrics(data: Dict[str, Any]) -> List[Metric]:
        """The default curve's peak all-reduce busbw on GPUs (the CPU path is not a GPU interconnect metric)."""
        plan = data.get("plan") if isinstance(data.get("plan"), dict) else {}
        if plan.get("kind") != "cuda":
            return []
        for curve in data.get("curves") or []:
            if isinstance(curve, dict) and curve.get("name") == "default" and not curve.get("error"):
                value = _number(curve.get("peak_busbw_gbps"))
                if value is not None:
                    return [Metric("%s.peak_busbw_gbps" % probe, None, None, value, "GB/s", "higher")]
        return []
    return metrics
