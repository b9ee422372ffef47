"""One memtest worker: size and allocate its buffer, wait at the start line, then pass after pass of each pattern until
the time budget is spent (every pattern at least once), and return what it tested and every error it found.

``run_worker`` is the together runner's task function (probelib.measure.together, Contract 1 of issue 35); memtest
also calls it in its own process when there is one worker only.
"""
from __future__ import annotations

import time
from typing import Any, Callable, Dict, List, Optional, Tuple

from probe_packages.memtest.passes import BufferTest, run_pass
from probe_packages.memtest.patterns import WORD_BYTES
from probe_packages.memtest.plan import MIB, aligned, cpu_buffer_bytes, gpu_buffer_bytes, inject_for
from probelib.fields import unavailable
from probelib.measure.devices import free_memory_bytes
from probelib.measure.phases import memory_share
from probelib.sweep import significant

TASK = "probe_packages.memtest.worker:run_worker"
# Left free beside the buffer on a GPU for what the check allocates besides its scratch chunk (a chunk's comparison
# mask, the counts, the allocator's rounding).
HEADROOM_MIB = 256
ALLOCATION_TRIES = 5


def run_worker(device: Dict[str, Any], worker: Dict[str, Any], args: Dict[str, Any], start: Callable[[], Any]) -> Dict[str, Any]:
    import torch

    plan = args["plan"]
    if device["kind"] == "cuda":
        torch.cuda.set_device(device["index"])
    free_now = free_memory_bytes(torch, device)
    basis, source = free_basis(args, device, free_now)
    share = memory_share(basis, worker["workers_on_device"])
    planned, note = planned_bytes(plan, device, worker, basis, free_now)
    test, note = allocate(torch, device, plan, planned, note)
    try:
        start()
        result = run_patterns(test, plan, inject_for(plan, worker["worker"]))
    finally:
        buffer_bytes, address = test.buffer_bytes, test.address()
        test.release()
    result.update({
        "buffer_bytes": buffer_bytes,
        "buffer_address": "0x%x" % address,
        "chunk_bytes": test.chunk_words * WORD_BYTES,
        "chunks": len(test.chunks),
        "free_memory_bytes": basis,
        "free_memory_source": source,
        "share_bytes": share,
        "tested_pct_of_share": significant(100.0 * buffer_bytes / share) if share else unavailable("no free memory"),
        "sizing_note": note,
    })
    return result


def free_basis(args: Dict[str, Any], device: Dict[str, Any], free_now: int) -> Tuple[int, str]:
    """The device's free memory before any worker allocated: the probe's NVML read where it had one, else this
    worker's own read."""
    given = (args.get("free_bytes") or {}).get(str(device["index"]))
    if device["kind"] == "cuda" and isinstance(given, int):
        return given, "NVML nvmlDeviceGetMemoryInfo free, read by the probe before any worker started"
    if device["kind"] == "cuda":
        return free_now, "torch.cuda.mem_get_info in this worker before it allocated (NVML gave no free memory)"
    return free_now, "MemAvailable of /proc/meminfo in this worker"


def planned_bytes(plan: Dict[str, Any], device: Dict[str, Any], worker: Dict[str, Any], basis: int,
                  free_now: int) -> Tuple[int, str]:
    """The buffer this worker means to test, and why it is smaller than the plan's share ('' when it is not)."""
    if device["kind"] != "cuda":
        return cpu_buffer_bytes(plan["cpu_mib"], worker["workers_on_device"]), ""
    wanted = gpu_buffer_bytes(basis, worker["workers_on_device"], plan["memory_pct"], plan["safety_margin_mib"])
    room = aligned(free_now - min(plan["chunk_bytes"], wanted) * 1.125 - HEADROOM_MIB * MIB)
    if wanted > room:
        return room, ("%d MiB planned, %d MiB taken: this worker found %d MiB free when it started"
                      % (wanted // MIB, room // MIB, free_now // MIB))
    return wanted, ""


def allocate(torch: Any, device: Dict[str, Any], plan: Dict[str, Any], size_bytes: int, note: str) -> Tuple[BufferTest, str]:
    """The buffer and its scratch chunk; out of memory, 10 % less, up to ALLOCATION_TRIES times."""
    for attempt in range(ALLOCATION_TRIES):
        if size_bytes < WORD_BYTES * 64:
            break
        try:
            test = BufferTest(torch, device, size_bytes // WORD_BYTES, plan["chunk_bytes"] // WORD_BYTES, plan["seed"])
            return test, note
        except RuntimeError as exc:  # torch.cuda.OutOfMemoryError is a RuntimeError
            if "out of memory" not in str(exc).lower() or attempt == ALLOCATION_TRIES - 1:
                raise
            if device["kind"] == "cuda":
                torch.cuda.empty_cache()
            smaller = aligned(size_bytes * 0.9)
            note = ((note + "; ") if note else "") + "%d MiB did not fit (out of memory), %d MiB tried" % (
                size_bytes // MIB, smaller // MIB)
            size_bytes = smaller
    raise RuntimeError("no memory to test: %d bytes left for the buffer (%s)" % (size_bytes, note or "nothing free"))


def run_patterns(test: BufferTest, plan: Dict[str, Any], inject: Optional[Dict[str, Any]]) -> Dict[str, Any]:
    """Rounds of one pass of each pattern until the budget is spent: the first round always runs whole; a later pass
    starts only when the same pattern's last pass still fits in what is left of the budget."""
    budget = plan["budget_s"]
    names = plan["patterns"]
    stats = {name: {"pattern": name, "passes": 0, "errors": 0, "seconds": 0.0} for name in names}
    last_seconds = {name: 0.0 for name in names}
    ranges: List[Dict[str, Any]] = []
    left_out = 0
    injected: Any = None
    rounds = 0
    began = time.perf_counter()
    stopped = ""
    while not stopped:
        for name in names:
            if rounds and time.perf_counter() - began + last_seconds[name] > budget:
                stopped = "the next %s pass (%.3g s) would end past the %g s budget" % (name, last_seconds[name], budget)
                break
            flip = None
            if inject is not None and injected is None and name == inject["pattern"]:
                flip, injected = injection(test, inject)
            record = run_pass(test, name, stats[name]["passes"], flip, plan["max_error_ranges"] - len(ranges))
            if record["injected"] is not None:
                injected = record["injected"]
            ranges += record["ranges"]
            left_out += record["ranges_left_out"]
            last_seconds[name] = record["seconds"]
            stats[name]["passes"] += 1
            stats[name]["errors"] += record["errors"]
            stats[name]["seconds"] += record["seconds"]
        else:
            rounds += 1
    test_s = time.perf_counter() - began
    patterns = [pattern_record(stats[name], test.buffer_bytes) for name in names]
    moved = sum(entry["bytes_written"] + entry["bytes_checked"] for entry in patterns)
    return {
        "budget_s": budget,
        "test_s": significant(test_s),
        "rounds": rounds,
        "stopped": stopped,
        "patterns": patterns,
        "bytes_written": sum(entry["bytes_written"] for entry in patterns),
        "bytes_checked": sum(entry["bytes_checked"] for entry in patterns),
        "errors": sum(entry["errors"] for entry in patterns),
        "gbps": significant(moved / test_s / 1e9) if test_s > 0 else unavailable("no time was measured"),
        "error_ranges": ranges,
        "error_ranges_left_out": left_out,
        "injected": injected,
    }


def injection(test: BufferTest, inject: Dict[str, Any]) -> Tuple[Optional[Dict[str, Any]], Any]:
    """(the flip run_pass makes, None) when the offset lies in the buffer; else (None, why it was not made)."""
    if inject["offset_bytes"] >= test.buffer_bytes:
        return None, unavailable("inject_offset_bytes %d lies beyond this worker's %d-byte buffer: nothing was flipped"
                                 % (inject["offset_bytes"], test.buffer_bytes))
    return {"offset_bytes": inject["offset_bytes"], "bit": inject["bit"]}, None


def pattern_record(stats: Dict[str, Any], buffer_bytes: int) -> Dict[str, Any]:
    moved = 2 * buffer_bytes * stats["passes"]
    return {
        "pattern": stats["pattern"],
        "passes": stats["passes"],
        "bytes_written": buffer_bytes * stats["passes"],
        "bytes_checked": buffer_bytes * stats["passes"],
        "errors": stats["errors"],
        "seconds": significant(stats["seconds"]),
        "gbps": significant(moved / stats["seconds"] / 1e9) if stats["seconds"] > 0 else unavailable("no pass ran"),
    }
