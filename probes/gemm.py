"""gemm probe: dense matrix-multiply rate per dtype and shape, each shape placed on its roofline before and after it runs."""
from __future__ import annotations

import sys
from typing import Any, Dict, Optional, Tuple

from probe_packages.gemm.cases import ShapeError, build_plan
from probe_packages.gemm.model_shapes import ModelConfigError, ModelShapes, load_model_shapes
from probe_packages.gemm.params import (GemmParameterError, check_bandwidth, check_dtypes, check_injection, check_model_config,
                                        check_peaks, check_token_counts)
from probe_packages.gemm.records import CONVENTIONS
from probe_packages.gemm.together import guarded_phase
from probelib import outcome
from probelib.runner import ParameterError, ProbeResult, main

DESCRIPTION = (
    "Time dense matrix multiplies C (MxN) = A (MxK) @ B (KxN) on the first GPU (alone_devices: all: every GPU, one "
    "after another; else the CPU) per dtype: fp32 (TF32 off), "
    "tf32, bf16, fp16 (torch.matmul) and fp8_e4m3 (torch._scaled_mm, per-tensor scales, bf16 output; needs compute "
    "capability 8.9). Shapes: a square sweep (GPU 1024-8192, CPU 256-1024), a large model's projections prefill-like "
    "(M = 4096, 8192 tokens) and decode-like (M = 1, 8, 32) (Llama-70B: QKV 8192->10240, O 8192->8192, MLP up 8192->28672, "
    "down 28672->8192; the CPU uses the same proportions at hidden 1024), and shapes awkward for tensor-core tiling "
    "(8191x8193x8191, 8208^3). TFLOP/s = 2MNK / time, from the median of repeats after a warm-up, random data. "
    "Roofline: intensity = 2MNK / minimum bytes moved, ridge = peak / bandwidth; every shape is classified memory- or "
    "compute-bound before it runs and explained after (fraction of min(peak, intensity x bandwidth), tiling, alignment, "
    "SM fill, launch overhead, clocks). The CPU runs fp32 and bf16 only. Then every GPU at once (workers_per_gpu "
    "processes each, released together): each times the calibration shape's sustained windows per power-state dtype, "
    "with NVML's clock-event duration counters read around them; not run with one GPU and one worker."
)
# Fixed parts of the two states: NVML every 10 ms (a sample takes well under 1 ms), three warm-up calls before a burst
# window, "idle" = power at most 30 % of the limit held for 2 s before each burst window (NVML's power is an average that
# lags the load, and the cap remembers the last burst; benchmarks/burst_idle_hold.py on the rig: no window capped at 2 s
# or 5 s, the medians within the spread, docs/gemm.md), one retry of a window the cap reached anyway.
POWER_STATE_FIXED = {"sampling_interval_s": 0.01, "burst_warmup_calls": 3, "idle_power_fraction": 0.3,
                     "burst_idle_hold_s": 2.0, "burst_retries": 1}


def check_params(params: Dict[str, Any]) -> None:
    try:
        params["dtypes"] = check_dtypes(params["dtypes"])
        check_bandwidth(params["memory_bandwidth_gbps"])
        check_peaks(params["peak_tflops"])
        params["model_prefill_tokens"] = check_token_counts("model_prefill_tokens", params["model_prefill_tokens"])
        params["model_decode_batches"] = check_token_counts("model_decode_batches", params["model_decode_batches"])
        check_model_config(params["model_config"], params["shapes"], params["model_prefill_tokens"],
                           params["model_decode_batches"])
    except GemmParameterError as exc:
        raise ParameterError(str(exc)) from exc
    try:
        params["power_state_dtypes"] = check_dtypes(params["power_state_dtypes"]) if params["power_state_dtypes"] else []
    except GemmParameterError as exc:
        raise ParameterError("power_state_dtypes: %s" % exc) from exc
    check_injection(params["inject_bit_flip"])


def collect(params: Dict[str, Any]) -> ProbeResult:
    # torch is imported here, not at the top: the runner checks that it imports, and --help works without it.
    import torch
    from probe_packages.gemm.sweep import DeviceSweep
    from probelib.measure.devices import measured_devices
    from probelib.measure.opening import torch_environment
    from probelib.measure.phases import alone_devices

    check_params(params)
    devices = measured_devices(torch, params["device"])
    environment = torch_environment(torch)
    if not devices:
        return ProbeResult("unavailable", {}, "no CUDA GPU is visible to torch %s (device=cuda was asked)" % torch.__version__,
                           environment)
    kind = devices[0]["kind"]
    try:
        plan = build_plan(kind, bool(params["quick"]), params["dtypes"], params["shapes"], model_shapes(params))
    except (ShapeError, ModelConfigError) as exc:
        raise ParameterError(str(exc)) from exc
    plan["power_state_dtypes"] = [name for name in params["power_state_dtypes"] if name in plan["dtypes"]]
    plan["power_state_settings"] = power_state_settings(params)
    snapshots = None
    if kind == "cuda":
        from probelib.measure.gpu_snapshot import GpuSnapshots
        snapshots = GpuSnapshots()
    data: Dict[str, Any] = {"plan": plan_record(plan, params), "conventions": dict(CONVENTIONS),
                            "torch_settings": torch_settings(torch), "devices": [], "errors": []}
    alone = alone_devices(devices, params["alone_devices"])
    try:
        for device in alone:
            sweep = DeviceSweep(torch, device, plan, params, snapshots.take if snapshots else None,
                                snapshots.reads if snapshots else None)
            try:
                data["devices"].append(sweep.run())
            except Exception as exc:  # one device fails alone
                sweep.error("device", exc)
                data["devices"].append(failed_device(device, sweep.errors[-1]["error"]))
            data["errors"].extend(sweep.errors)
    finally:
        if snapshots is not None:
            snapshots.close()
    # the together phase (issue 35): every device at once, after the alone phase has given its reference
    data["together"], together_errors = guarded_phase(devices, plan, params, data["devices"])
    data["errors"].extend(together_errors)
    status, reason = outcome_of(data)
    return ProbeResult(status, data, reason, environment)


def model_shapes(params: Dict[str, Any]) -> Optional[ModelShapes]:
    """The shapes of the model_config parameter's model, or None without one."""
    if params["model_config"] is None:
        return None
    return load_model_shapes(params["model_config"], params["model_prefill_tokens"], params["model_decode_batches"])


def plan_record(plan: Dict[str, Any], params: Dict[str, Any]) -> Dict[str, Any]:
    record = {
        "name": plan["name"], "quick": plan["quick"], "dtypes": plan["dtypes"],
        "cases": [case.as_dict() for case in plan["cases"]],
        "production_shapes_source": plan["production_shapes_source"],
        "calibration_case": plan["calibration_case"].name,
        "repeats": params["repeats"],
        "repeat_time_s": float(params["repeat_time_s"] or plan["repeat_time_s"]),
        "warmup_time_s": float(params["warmup_time_s"] or plan["warmup_time_s"]),
        "min_iterations": plan["min_iterations"], "max_iterations": plan["max_iterations"],
        "fp8_fast_accum": bool(params["fp8_fast_accum"]),
        "power_state_dtypes": plan.get("power_state_dtypes", []),
        "power_state_settings": plan.get("power_state_settings") or power_state_settings(params),
    }
    if "model" in plan:
        record["model"] = plan["model"]
    return record


def power_state_settings(params: Dict[str, Any]) -> Dict[str, Any]:
    settings = {key: float(params[key]) for key in ("burst_window_s", "sustained_settle_s", "sustained_window_s", "idle_wait_max_s")}
    settings.update(POWER_STATE_FIXED)
    return settings


def torch_settings(torch: Any) -> Dict[str, Any]:
    matmul = torch.backends.cuda.matmul
    return {
        "allow_tf32_at_start": bool(matmul.allow_tf32),
        "allow_bf16_reduced_precision_reduction": bool(matmul.allow_bf16_reduced_precision_reduction),
        "allow_fp16_reduced_precision_reduction": bool(matmul.allow_fp16_reduced_precision_reduction),
        "cpu_threads": int(torch.get_num_threads()),
    }


def failed_device(device: Dict[str, Any], error: str) -> Dict[str, Any]:
    reason = {"unavailable": "the device failed: %s" % error}
    info = {key: device[key] for key in ("kind", "index", "name", "uuid", "memory_total_mib", "compute_capability")}
    info["multi_processor_count"] = reason
    info["l2_cache_bytes"] = reason
    return {"device": info, "status": "error", "gpu_state_before": reason, "roofline": reason, "dtypes": reason,
            "results": [], "gpu_state_after": reason}


def measured(data: Dict[str, Any]) -> bool:
    return any(isinstance(result.get("measurement"), dict) and "tflops" in result["measurement"]
               for device in data["devices"] for result in device["results"])


def outcome_of(data: Dict[str, Any]) -> Tuple[str, str]:
    """(status, reason): the reason names the first 5 failures, then how many more; nothing measured without a failure
    says so."""
    return outcome.decide(data["errors"], describe_error, measured(data), "what failed: ", limit=5)


def describe_error(error: Dict[str, Any]) -> str:
    return "device %s%s%s: %s" % (error["device_index"], " " + error["dtype"] if error["dtype"] else "",
                                  " " + error["case"] if error["case"] else "", error["error"])


if __name__ == "__main__":
    sys.exit(main("gemm", DESCRIPTION, collect, requires=("torch",), measures_gpus=True))
