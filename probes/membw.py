"""membw probe: device memory bandwidth from a sweep of device-to-device copies; reports the plateau, not the maximum."""
from __future__ import annotations

import sys
from typing import Any, Dict, List

from probe_packages.membw.device_run import DeviceRun
from probe_packages.membw.gpu_state import METHOD as SNAPSHOT_METHOD
from probe_packages.membw.plan import check_params, resolve_plan
from probe_packages.membw.together import copy_errors
from probe_packages.membw.together_phase import together_phase
from probelib import device_outcome
from probelib.measure.opening import PerGpuOpening, per_gpu_collect
from probelib.measure.phases import alone_devices
from probelib.measure.together_outcome import run_phase, with_together
from probelib.runner import ProbeResult, main

DESCRIPTION = (
    "Measure device memory bandwidth on every GPU (or on the CPU when there is none) with dst.copy_(src) of random "
    "data over a sweep of buffer sizes, each bounded by free memory (two buffers plus a safety margin must fit; a size "
    "that does not is recorded as skipped). Each copy is checked once; the copies are timed with CUDA events after a "
    "warm-up. Bandwidth counts bytes read + written (2 x buffer per copy), GB = 1e9 bytes. Reports the plateau (the "
    "longest run of consecutive large sizes within a tolerance of their median), never the maximum, and three "
    "independent repeats at the largest size that fits with their coefficient of variation and the GPU's state "
    "(clocks, power, temperature, throttle reasons, other processes) taken during the middle repeat. That runs alone, "
    "one GPU after another, on the first GPU (alone_devices: first) or every GPU (all). Then, with two or more workers "
    "(GPUs x workers_per_gpu), the together phase: one worker process per GPU (or per share of one), released together, "
    "each timing the same repeats at the largest size that fits its share of the free memory, compared with the alone "
    "repeats at the same size."
)
BYTES_COUNTED = "read + written (2 x buffer size per copy)"


def method_of(kind: str) -> Dict[str, Any]:
    timing = ("CUDA events on the current stream around the back-to-back copies, after a warm-up" if kind == "cuda"
              else "time.perf_counter around the back-to-back copies, after a warm-up")
    return {
        "operation": "dst.copy_(src), both buffers on the measured device, src random (torch.rand / torch.randint)",
        "bytes_counted": BYTES_COUNTED,
        "bandwidth_definition": "bandwidth_gbps = 2 x buffer_bytes / time_per_copy_s / 1e9 (GB = 1e9 bytes)",
        "timing": timing,
        "verification": "once per size: dst set to differ from src everywhere, one copy, evenly spaced elements compared",
        "plateau_rule": ("from the largest sizes down, the longest run of consecutive measured sizes (buffer >= "
                         "l2_multiple x last-level cache) within tolerance_pct of the run's median, at least "
                         "min_plateau_points points; plateau_gbps is that median"),
        "gpu_state": SNAPSHOT_METHOD if kind == "cuda" else "not taken: the CPU has no NVML state",
        "together": ("one worker process per GPU and share (workers_per_gpu), released together at a barrier: each "
                     "copies at the largest size whose two buffers fit its share of the free memory (free / "
                     "workers_on_device, the same margin), checks one copy, calibrates, then times `repeats` timings "
                     "as the alone repeats are timed; bandwidth_gbps is their median. The reference is the first alone "
                     "device's repeats at the same size (timed again alone at a worker's size where it differs)"),
    }


def open_snapshots(devices: List[Dict[str, Any]]) -> Any:
    if not any(device["kind"] == "cuda" for device in devices):
        return None
    try:
        from probelib.measure.gpu_snapshot import GpuSnapshots
        return GpuSnapshots()
    except Exception:  # without NVML the snapshots are unavailable, the measurement still runs
        return None


def snapshot_for(snapshots: Any, device: Dict[str, Any]) -> Any:
    if device["kind"] != "cuda":
        return None
    if snapshots is None:
        return lambda: {"unavailable": "NVML (nvidia-ml-py) could not be opened by this probe"}
    return lambda: snapshots.take(device["uuid"])


def measure(torch: Any, params: Dict[str, Any], opened: PerGpuOpening) -> ProbeResult:
    devices, kind, plan, environment = opened.devices, opened.kind, opened.plan, opened.environment
    alone = alone_devices(devices, params["alone_devices"])
    snapshots = open_snapshots(alone)
    results = []
    try:
        for device in alone:
            results.append(DeviceRun(torch, device, plan, snapshot_for(snapshots, device)).run())
    finally:
        if snapshots is not None:
            snapshots.close()
    together, together_errors = run_phase(lambda: together_phase(torch, devices, results, plan, params["workers_per_gpu"]),
                                          "%s:%d" % (kind, devices[0]["index"]))
    together_errors += copy_errors(together)
    errors = [{"device": "%s:%d" % (entry["device"]["kind"], entry["device"]["index"]), "error": problem}
              for entry in results for problem in entry.get("problems", [])] + together_errors
    data = {"method": method_of(kind), "plan": plan, "devices": results, "errors": errors, "together": together}
    status, reason = with_together(*device_outcome.decide(results), together_errors, together)
    return ProbeResult(status, data, reason, environment)


collect = per_gpu_collect(check_params, resolve_plan, method_of, measure)

if __name__ == "__main__":
    sys.exit(main("membw", DESCRIPTION, collect, requires=("torch",), measures_gpus=True))
