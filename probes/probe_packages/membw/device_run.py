"""One device's membw run: the sweep (each size bounded by free memory), the plateau, repeats at the largest size."""
from __future__ import annotations

import time
from typing import Any, Callable, Dict, List, Optional

from probe_packages.membw.bench import CopyBuffers, calibrate, timed, timed_repeats
from probe_packages.membw.gpu_state import SnapshotDuring
from probe_packages.membw.plan import MIB, bandwidth_gbps, fits
from probe_packages.membw.summary import headline, plateau_record, repeats_record
from probelib.device_outcome import close_sweep
from probelib.fields import is_unavailable, unavailable
from probelib.measure.cache import last_level_cache
from probelib.measure.devices import free_memory_bytes
from probelib.sweep import regimes, significant

DEVICE_KEYS = ("kind", "index", "name", "uuid", "memory_total_mib", "compute_capability")
NOT_MEASURED = "not measured"
MEASURED_KEYS = ("iterations", "time_per_copy_s", "bandwidth_gbps", "copy_verified", "verified_elements")


def describe(exc: BaseException) -> Dict[str, str]:
    return {"type": type(exc).__name__, "message": str(exc)[:2000]}


def unmeasured_point(size_mib: int, status: str, reason: str) -> Dict[str, Any]:
    point: Dict[str, Any] = {"size_mib": size_mib, "buffer_bytes": size_mib * MIB, "status": status, "reason": reason,
                             "regime": NOT_MEASURED}
    for key in MEASURED_KEYS:
        point[key] = unavailable("%s: %s" % (status, reason))
    return point


class DeviceRun:
    """Measures one device; ``snapshot`` is GpuSnapshots.take bound to this GPU's UUID (None on the CPU)."""

    def __init__(self, torch: Any, device: Dict[str, Any], plan: Dict[str, Any],
                 snapshot: Optional[Callable[[], Any]]) -> None:
        self.torch = torch
        self.device = device
        self.plan = plan
        self.snapshot = snapshot
        self.problems: List[str] = []

    def free_bytes(self) -> int:
        return free_memory_bytes(self.torch, self.device)

    def measure_point(self, size_mib: int) -> Dict[str, Any]:
        buffers = None
        try:
            buffers = CopyBuffers(self.torch, self.device, size_mib, self.plan["dtype"])
            verified, elements = buffers.verify(self.plan["verify_sample_elements"])
            iterations = calibrate(self.torch, self.device, buffers, self.plan)
            result = timed(self.torch, self.device, buffers, iterations, 1)
        except Exception as exc:  # one size failing (e.g. out of memory) does not end the sweep
            self.problems.append("%d MiB failed: %s: %s" % (size_mib, type(exc).__name__, exc))
            return unmeasured_point(size_mib, "failed", "%s: %s" % (type(exc).__name__, str(exc)[:500]))
        finally:
            if buffers is not None:
                buffers.release()
        if not verified:
            self.problems.append("%d MiB: the copy did not match its source" % size_mib)
        return {"size_mib": size_mib, "buffer_bytes": size_mib * MIB, "status": "measured", "reason": "",
                "iterations": iterations, "time_per_copy_s": significant(result["time_per_copy_s"]),
                "bandwidth_gbps": significant(result["bandwidth_gbps"]), "copy_verified": verified,
                "verified_elements": elements, "regime": NOT_MEASURED}

    def sweep(self) -> List[Dict[str, Any]]:
        points: List[Dict[str, Any]] = []
        sizes = self.plan["sizes_mib"]
        margin = (self.plan["safety_margin_mib"], self.plan["safety_margin_pct"])
        if self.plan["quick"]:
            chosen = None
            for size in sorted(sizes, reverse=True):
                fit, reason = fits(size, self.free_bytes(), *margin)
                if fit:
                    chosen = size
                    break
                points.append(unmeasured_point(size, "skipped", reason))
            for size in sorted(sizes, reverse=True):
                if chosen is not None and size < chosen:
                    points.append(unmeasured_point(size, "skipped", "quick mode measures only the largest size that fits"))
            if chosen is not None:
                points.append(self.measure_point(chosen))
            return sorted(points, key=lambda point: point["size_mib"])
        for size in sizes:
            fit, reason = fits(size, self.free_bytes(), *margin)
            points.append(self.measure_point(size) if fit else unmeasured_point(size, "skipped", reason))
        return points

    def repeats(self, point: Dict[str, Any]) -> Dict[str, Any]:
        """``repeats`` independent timings at the point's size; the GPU state is taken during the middle one."""
        plan = self.plan
        buffers = CopyBuffers(self.torch, self.device, point["size_mib"], plan["dtype"])
        state: List[Any] = [unavailable("the CPU has no NVML state") if self.snapshot is None else None]
        middle = plan["repeats"] // 2

        def watch(repeat: int, timing: Callable[[], float]) -> float:
            if repeat != middle or self.snapshot is None:
                return timing()
            watcher = SnapshotDuring(self.snapshot, point["time_per_copy_s"] * point["iterations"] / 2.0).start()
            window_start = time.time()
            seconds = timing()
            state[0] = watcher.finish(window_start, time.time())
            return seconds

        try:
            seconds = timed_repeats(self.torch, self.device, buffers, point["iterations"], plan, watch)
        finally:
            buffers.release()
        values = [bandwidth_gbps(buffers.buffer_bytes, value) for value in seconds]
        record = repeats_record(point["size_mib"], point["iterations"], values, seconds, plan["cv_warn_pct"])
        # cv_warn is left to the judge: it does not make the probe partial
        record["gpu_state"] = state[0] if state[0] is not None else unavailable("no repeat ran")
        return record

    def run(self) -> Dict[str, Any]:
        entry: Dict[str, Any] = {"device": {key: self.device.get(key) for key in DEVICE_KEYS}, "status": "ok",
                                 "error": None}
        try:
            entry.update(self._measure())
        except Exception as exc:  # a failing device is recorded; the other devices still run
            entry["status"] = "error"
            entry["error"] = describe(exc)
            self.problems.append("%s: %s" % (type(exc).__name__, exc))
            entry["problems"] = list(self.problems)
            return entry
        return close_sweep(entry, entry["sweep"], lambda point: "%d MiB" % point["size_mib"], self.problems)

    def _measure(self) -> Dict[str, Any]:
        plan = self.plan
        cache = last_level_cache(self.torch, self.device)
        cache_bytes = cache["bytes"]
        min_size_mib = 0.0 if is_unavailable(cache_bytes) else plan["l2_multiple"] * cache_bytes / MIB
        free_at_start = self.free_bytes()
        points = self.sweep()
        good = [point for point in points if point["status"] == "measured" and point["copy_verified"]]
        sizes = [point["size_mib"] for point in good]
        values = [point["bandwidth_gbps"] for point in good]
        plateau = plateau_record(sizes, values, plan, min_size_mib)
        if not plan["quick"]:
            for point, label in zip(good, regimes(sizes, {"found": plateau["found"], "sizes": plateau["sizes_mib"],
                                                          "indices": [sizes.index(size) for size in plateau["sizes_mib"]]},
                                                  min_size_mib)):
                point["regime"] = label
        repeats: Any = unavailable("no size was measured with a verified copy, so there is nothing to repeat")
        repeats_median = None
        if good:
            try:
                repeats = self.repeats(good[-1])
                repeats_median = repeats["median_gbps"]
            except Exception as exc:  # the sweep stands even when the repeats fail
                self.problems.append("repeats failed: %s: %s" % (type(exc).__name__, exc))
                repeats = unavailable("the repeats failed: %s: %s" % (type(exc).__name__, str(exc)[:500]))
        if plan["quick"] and good:
            good[-1]["regime"] = "quick (no sweep)"
        return {
            "free_memory_bytes_at_start": free_at_start,
            "last_level_cache_bytes": cache_bytes,
            "last_level_cache_source": cache["source"],
            "sweep": points,
            "plateau": plateau,
            "repeats": repeats,
            "headline": headline(plan["quick"], plateau, good[-1]["size_mib"] if good else None,
                                 good[-1]["bandwidth_gbps"] if good else None, repeats_median),
        }
