"""membw's together worker: one process per worker copies on its device while every other worker copies on its own.

Each worker takes the largest size of the plan whose two buffers fit its share of the device's free memory (free /
workers_on_device, less the plan's safety margin), checks one copy, calibrates the iteration count, waits at the common
start line, then times the plan's repeats exactly as the alone phase times its headline repeats (bench.timed_repeats).
"""
from __future__ import annotations

import time
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple

from probe_packages.membw.bench import CopyBuffers, calibrate, timed_repeats
from probe_packages.membw.plan import bandwidth_gbps, fits
from probelib.fields import unavailable
from probelib.measure.devices import free_memory_bytes
from probelib.measure.phases import memory_share
from probelib.sweep import CV_NEEDS_TWO, cv_pct, median, significant

TASK = "probe_packages.membw.together:copy_worker"
IDENTITY = ("kind", "index", "name", "uuid")
ALONE_SOURCE = "the alone phase's headline repeats"
AT_WORKER_SIZE = "timed alone after the together phase at the workers' size, the same way as the headline repeats"


def largest_fitting(sizes_mib: Sequence[int], share_bytes: int, safety_margin_mib: float,
                    safety_margin_pct: float) -> Tuple[Optional[int], str]:
    """(the largest size whose two buffers and the margin fit in share_bytes, or None; why the largest did not fit)."""
    reasons = []
    for size in sorted(sizes_mib, reverse=True):
        fit, reason = fits(size, share_bytes, safety_margin_mib, safety_margin_pct)
        if fit:
            return size, "; ".join(reasons)
        reasons.append(reason)
    return None, reasons[-1] if reasons else "the plan has no size"


def worker_result(size_mib: int, iterations: int, seconds: List[float], free_bytes: int, share_bytes: int,
                  verified: bool, elements: int, window_s: float) -> Dict[str, Any]:
    """One worker's record: the median of its repeats is its bandwidth_gbps (bytes read + written, GB = 1e9)."""
    rates = [bandwidth_gbps(size_mib * 2 ** 20, value) for value in seconds]
    spread = cv_pct(rates)
    return {"buffer_mib": size_mib, "bandwidth_gbps": significant(median(rates)),
            "repeats_gbps": [significant(rate) for rate in rates],
            "cv_pct": significant(spread) if spread is not None else unavailable(CV_NEEDS_TWO),
            "iterations": iterations, "times_per_copy_s": [significant(value) for value in seconds],
            "copy_verified": verified, "verified_elements": elements, "free_bytes_at_start": free_bytes,
            "share_bytes": share_bytes, "window_s": round(window_s, 4)}


def copy_worker(device: Dict[str, Any], worker: Dict[str, Any], args: Dict[str, Any],
                start: Callable[[], float]) -> Dict[str, Any]:
    """The together runner's task: prepare, pass the start line, time args["plan"]'s repeats (see the module)."""
    import torch  # pylint: disable=import-outside-toplevel

    plan = args["plan"]
    free = free_memory_bytes(torch, device)
    share = memory_share(free, worker["workers_on_device"])
    size, why = largest_fitting(plan["sizes_mib"], share, plan["safety_margin_mib"], plan["safety_margin_pct"])
    if size is None:
        raise MemoryError("no size of the plan fits this worker's share of %d MiB of the free memory: %s" % (share >> 20, why))
    buffers = CopyBuffers(torch, device, size, plan["dtype"])
    try:
        verified, elements = buffers.verify(plan["verify_sample_elements"])
        iterations = calibrate(torch, device, buffers, plan)
        start()
        started = time.monotonic()
        seconds = timed_repeats(torch, device, buffers, iterations, plan)
        window_s = time.monotonic() - started
    finally:
        buffers.release()
    return dict(worker_result(size, iterations, seconds, free, share, verified, elements, window_s),
                device={key: device.get(key) for key in IDENTITY})


def headline_reference(entry: Any) -> Dict[str, Any]:
    """The alone phase's headline repeats of one device entry as the together phase's reference, or unavailable."""
    device = entry.get("device") if isinstance(entry, dict) and isinstance(entry.get("device"), dict) else {}
    repeats = entry.get("repeats") if isinstance(entry, dict) else None
    if not isinstance(repeats, dict) or "unavailable" in repeats:
        why = repeats["unavailable"] if isinstance(repeats, dict) else "the alone phase recorded no repeats"
        return unavailable("no alone reference on %s:%s: %s" % (device.get("kind"), device.get("index"), why))
    return {"device_index": device.get("index"), "buffer_mib": repeats["size_mib"], "bandwidth_gbps": repeats["median_gbps"],
            "repeats_gbps": list(repeats["bandwidths_gbps"]), "cv_pct": repeats["cv_pct"], "source": ALONE_SOURCE}


def at_size(record: Dict[str, Any]) -> Dict[str, Any]:
    """A repeats record (DeviceRun.repeats) timed alone at a worker's size, as a reference of the same fields."""
    return {"buffer_mib": record["size_mib"], "bandwidth_gbps": record["median_gbps"],
            "repeats_gbps": list(record["bandwidths_gbps"]), "cv_pct": record["cv_pct"], "source": AT_WORKER_SIZE}


def sizes_without_reference(reference: Dict[str, Any], workers: List[Dict[str, Any]]) -> List[int]:
    """The buffer sizes ok workers copied that the reference has no same-size number for."""
    have = {reference.get("buffer_mib")} | {other.get("buffer_mib") for other in reference.get("other_sizes", [])}
    sizes = {worker["result"]["buffer_mib"] for worker in workers if worker.get("status") == "ok" and "result" in worker}
    return sorted(size for size in sizes if size not in have)


def copy_errors(record: Any) -> List[Dict[str, str]]:
    """{device, error} of each ok worker whose checked copy did not match its source."""
    errors = []
    for worker in record.get("workers", []) if isinstance(record, dict) else []:
        result = worker.get("result") if isinstance(worker.get("result"), dict) else {}
        if result.get("copy_verified") is False:
            errors.append({"device": "%s:%d" % (worker["kind"], worker["device_index"]),
                           "error": "together worker %d: the %d MiB copy did not match its source" % (
                               worker["worker"], result["buffer_mib"])})
    return errors
