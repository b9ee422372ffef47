"""Run one measurement on every device at once: one worker process per GPU (or several per device), each prepared
apart, all released together at a barrier, each timing itself.

A task is ``"probe_packages.<package>.<module>:<function>"`` (a module importable from the probes directory); the worker
process (together_worker.py) imports it and calls
``function(device, worker, args, start)``: ``device`` is the measured_devices() entry, ``worker`` this Worker as a
dict, ``args`` the JSON-able arguments given here, ``start()`` blocks until every worker is ready (or has exited, or
the barrier's time is up) and returns how many ms after the common release this worker passed the line (None when
it was not released with the others). What the function returns (JSON-able) is the worker's result; what it raises
is that worker's error, and the other workers go on. Processes, not threads: each worker launches its own kernels
without a shared interpreter lock, and a worker that crashes or hangs is killed alone at the deadline.
"""
from __future__ import annotations

import json
import os
import shutil
import sys
import tempfile
import time
from dataclasses import asdict, dataclass
from typing import Any, Dict, List, Optional

from probelib.measure import launcher

WORKER_SCRIPT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "together_worker.py")
PROBES_DIR = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
# Workers that are ready wait at most this long for the others before each measures on its own.
BARRIER_LIMIT_S = 120.0
GO_FILE = "go"
METHOD = ("one worker process per GPU (workers_per_gpu per device), started with argv, no shell; each prepares "
          "(imports, CUDA context, allocations, warm-up) and waits at a barrier (a file per ready worker); the parent "
          "releases them all at once when every worker is ready or has exited (or after %d s), writing the release "
          "time (CLOCK_MONOTONIC, shared by every process of the host) that each worker subtracts from the moment "
          "it passed the line (start_lag_ms); each worker times its own work (CUDA events on its device); a worker "
          "still running at the deadline is killed alone; the others' results stand" % BARRIER_LIMIT_S)


@dataclass
class Worker:
    """One worker of a together phase: which device it measures and how many workers share that device."""

    worker: int
    kind: str
    device_index: int
    slot: int
    workers_on_device: int


def plan_workers(devices: List[Dict[str, Any]], workers_per_gpu: int) -> List[Worker]:
    """workers_per_gpu workers on each device, numbered device by device."""
    workers = []
    for device in devices:
        for slot in range(workers_per_gpu):
            workers.append(Worker(len(workers), device["kind"], int(device["index"]), slot, workers_per_gpu))
    return workers


def not_needed(workers: List[Worker]) -> Optional[str]:
    """Why the together phase does not run (fewer than two workers), or None when it does."""
    if not workers:
        return "no device to measure"
    if len(workers) == 1:
        what = "GPU" if workers[0].kind == "cuda" else "device"
        return ("one %s and workers_per_gpu 1: every %s at once is this %s alone, measured in the alone phase"
                % (what, what, what))
    return None


def run_together(task: str, args: Dict[str, Any], workers: List[Worker], deadline_s: float,
                 devices: Optional[List[Dict[str, Any]]] = None, probes_dir: str = PROBES_DIR) -> Dict[str, Any]:
    """Run task on every worker at once and return the phase's record: method, task, each worker's record (its
    Worker fields, status ok with result or error with error, start_lag_ms, duration_s), released_together (every
    ok worker passed the start line at the release), start_spread_ms and wall_s.
    devices: the measured_devices() entries the workers name (by index); without them each worker gets
    {"kind", "index"} only. probes_dir: the directory the workers import from (the one that holds probelib and probe_packages)."""
    by_index = {int(device["index"]): device for device in devices or []}
    workdir = tempfile.mkdtemp(prefix="gpufleet-together-")
    started = time.monotonic()
    try:
        specs = [_spec(workdir, task, args, worker, by_index.get(worker.device_index), deadline_s, probes_dir) for worker in workers]
        barrier = _Barrier(workdir)
        outcome = launcher.run_workers(specs, deadline_s, failure_grace_s=None, on_poll=barrier.poll)
        records = [_record(worker, spec, code, outcome.timed_out) for worker, spec, code in zip(workers, specs, outcome.returncodes)]
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
    lags = [record["start_lag_ms"] for record in records if record["start_lag_ms"] is not None]
    ok = [record for record in records if record["status"] == "ok"]
    return {
        "method": METHOD,
        "task": task,
        "workers": records,
        "released_together": bool(ok) and all(record["start_lag_ms"] is not None for record in ok),
        "start_spread_ms": round(max(lags) - min(lags), 3) if lags else None,
        "wall_s": round(time.monotonic() - started, 3),
    }


def _spec(workdir: str, task: str, args: Dict[str, Any], worker: Worker, device: Optional[Dict[str, Any]],
          deadline_s: float, probes_dir: str) -> launcher.WorkerSpec:
    base = os.path.join(workdir, "worker-%d" % worker.worker)
    job = {"task": task, "args": args, "worker": asdict(worker),
           "device": device if device is not None else {"kind": worker.kind, "index": worker.device_index},
           "barrier_dir": workdir, "barrier_limit_s": min(BARRIER_LIMIT_S, max(1.0, deadline_s / 2.0))}
    with open(base + ".job.json", "w", encoding="utf-8") as handle:
        json.dump(job, handle, default=str)
    argv = [sys.executable, WORKER_SCRIPT, "--probes-dir", probes_dir, "--job", base + ".job.json",
            "--out", base + ".result.json", "--parent-pid", str(os.getpid())]
    return launcher.WorkerSpec(worker.worker, argv, dict(os.environ), base + ".out", base + ".err", base + ".result.json")


class _Barrier:
    """Releases the workers once each is ready (its ready file exists) or has exited."""

    def __init__(self, workdir: str) -> None:
        self.workdir = workdir
        self.released = False

    def poll(self, codes: List[Optional[int]]) -> None:
        if self.released:
            return
        waiting = [index for index, code in enumerate(codes)
                   if code is None and not os.path.exists(os.path.join(self.workdir, "ready-%d" % index))]
        if not waiting:
            release(self.workdir)
            self.released = True


def release(workdir: str) -> None:
    """Write the release time, atomically: a worker never reads half of it."""
    temporary = os.path.join(workdir, GO_FILE + ".tmp")
    with open(temporary, "w", encoding="utf-8") as handle:
        handle.write(repr(time.monotonic()))
    os.rename(temporary, os.path.join(workdir, GO_FILE))


def _record(worker: Worker, spec: launcher.WorkerSpec, code: Optional[int], timed_out: bool) -> Dict[str, Any]:
    record: Dict[str, Any] = asdict(worker)
    written = launcher.read_result(spec.result_path) or {}
    record["start_lag_ms"] = written.get("start_lag_ms")
    record["duration_s"] = written.get("duration_s")
    if code == 0 and "result" in written:
        record["status"] = "ok"
        record["result"] = written["result"]
        return record
    record["status"] = "error"
    if written.get("error"):
        record["error"] = written["error"]
    elif timed_out and code is not None and code < 0:
        record["error"] = "still running at the deadline: killed"
    else:
        tail = launcher.stderr_tail(launcher.read_text(spec.stderr_path))
        record["error"] = "the worker %s without a result%s" % (launcher.describe_exit(code), ": " + tail if tail else "")
    return record
