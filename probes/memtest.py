"""memtest probe: pattern tests over most of every GPU's free memory, all GPUs at once, within a time budget; the GPUs'
ECC and remapped-row counters read before and after."""
from __future__ import annotations

import sys
import time
from typing import Any, Dict, List

from probe_packages.memtest.counters import CounterReads
from probe_packages.memtest.patterns import PATTERNS
from probe_packages.memtest.plan import SETUP_ALLOWANCE_S, check_params, resolve_plan
from probe_packages.memtest.summary import device_entry
from probe_packages.memtest.worker import TASK, run_worker
from probelib import device_outcome
from probelib.fields import is_number
from probelib.measure.opening import PerGpuOpening, per_gpu_collect
from probelib.measure.together import Worker, not_needed, plan_workers, run_together
from probelib.runner import ProbeResult, main

DESCRIPTION = (
    "Test device memory on every GPU at once (or host memory on the CPU path): one worker per GPU (workers_per_gpu "
    "per GPU) fills memory_pct %% of its share of the GPU's free memory with 64-bit words in the patterns %s, pass after "
    "pass until budget_s is spent (every pattern at least once), and checks each pass on the device in chunks; errors "
    "are reported by byte range in the worker's buffer with the first expected and found word. The GPUs' NVML ECC "
    "counters (volatile and aggregate, corrected and uncorrected) and remapped rows are read before and after; any rise "
    "is named." % ", ".join(PATTERNS)
)
IN_PROCESS = ("one worker: run in the probe's own process (no barrier to wait at, no second interpreter importing "
              "torch); its record has the together runner's shape")


def method_of(kind: str) -> Dict[str, Any]:
    return {
        "patterns": ("walking_ones: word i holds 1 << ((i + pass) mod 64); walking_zeros: its complement; address: word i "
                     "holds its byte offset, complemented on odd passes; random: torch's generator seeded from (seed, "
                     "pass, chunk), regenerated for the check"),
        "word": "64-bit words (torch.int64)",
        "check": ("each chunk compared on the device with what the pattern wrote (a broadcast of the 64-word tile, or "
                  "the words regenerated into a scratch chunk), its wrong words counted there; the counts copied to the "
                  "host once per pass; a chunk with errors read again for its first and last wrong word"),
        "budget": ("rounds of one pass of each pattern: the first round always runs whole; later, a pass starts only "
                   "when the same pattern's last pass fits in what is left of budget_s"),
        "sizing": ("GPU: memory_pct % of the GPU's free memory (NVML, read before any worker started) after "
                   "safety_margin_mib, split equally between the workers on the GPU" if kind == "cuda" else
                   "CPU: cpu_mib of host memory split equally between the workers"),
        "rate": "gbps = (bytes written + bytes read back for the check) / the passes' time (time.perf_counter) / 1e9",
        "counters": ("NVML nvmlDeviceGetTotalEccErrors (volatile, aggregate; corrected, uncorrected) and "
                     "nvmlDeviceGetRemappedRows, read before the workers start and after they end" if kind == "cuda"
                     else "none: the CPU has no NVML counters"),
    }


def run_workers(workers: List[Worker], devices: List[Dict[str, Any]], args: Dict[str, Any]) -> Dict[str, Any]:
    """Every worker at once through the together runner; one worker in this process."""
    if not_needed(workers) is None:
        record = run_together(TASK, args, workers, args["plan"]["budget_s"] + SETUP_ALLOWANCE_S, devices=devices)
        record["mode"] = "processes"
        return record
    (worker,) = workers
    entry: Dict[str, Any] = {"worker": worker.worker, "kind": worker.kind, "device_index": worker.device_index,
                             "slot": worker.slot, "workers_on_device": worker.workers_on_device}
    began = time.monotonic()
    try:
        entry["result"] = run_worker(devices[0], dict(entry), args, lambda: 0.0)
        entry["status"] = "ok"
    except Exception as exc:  # the worker's error is its record's, as in the together runner
        entry["status"] = "error"
        entry["error"] = "%s: %s" % (type(exc).__name__, str(exc)[:2000])
    entry["start_lag_ms"] = 0.0
    entry["duration_s"] = round(time.monotonic() - began, 3)
    return {"method": IN_PROCESS, "task": TASK, "mode": "in_process", "workers": [entry], "released_together": True,
            "start_spread_ms": 0.0, "wall_s": entry["duration_s"]}


def measure(torch: Any, params: Dict[str, Any], opened: PerGpuOpening) -> ProbeResult:
    devices, kind, plan, environment = opened.devices, opened.kind, opened.plan, opened.environment
    workers = plan_workers(devices, plan["workers_per_gpu"])
    reads = CounterReads(devices)
    try:
        free = {device["index"]: reads.free_bytes(device) for device in devices}
        before = {device["index"]: reads.counters(device) for device in devices}
        args = {"plan": plan, "free_bytes": {str(index): value for index, value in free.items() if is_number(value)}}
        run = run_workers(workers, devices, args)
        after = {device["index"]: reads.counters(device) for device in devices}
    finally:
        reads.close()
    entries = [device_entry(device, [record for record in run["workers"] if record["device_index"] == device["index"]],
                            free[device["index"]], before[device["index"]], after[device["index"]]) for device in devices]
    errors = [{"device": "%s:%d" % (entry["device"]["kind"], entry["device"]["index"]), "error": problem}
              for entry in entries for problem in entry["problems"]]
    data = {"method": method_of(kind), "plan": plan, "devices": entries, "together": run, "errors": errors}
    status, reason = device_outcome.decide(entries)
    return ProbeResult(status, data, reason, environment)


collect = per_gpu_collect(check_params, resolve_plan, method_of, measure)

if __name__ == "__main__":
    sys.exit(main("memtest", DESCRIPTION, collect, requires=("torch",), measures_gpus=True))
