"""The probe's own bandwidth for the ridge when none is given: a device-to-device copy, bytes read + written."""
from __future__ import annotations

import statistics
from typing import Any, Dict

from probe_packages.gemm.cases import iterations_for
from probelib.measure.timing import repeat_s, time_per_iteration_s

MIB = 2 ** 20


def copy_buffer_bytes(max_bytes: int, free_bytes: int) -> int:
    """The largest buffer up to ``max_bytes`` whose source and destination fit in 80 % of free memory (whole MiB)."""
    fits = int(free_bytes * 0.8) // 2
    return max(MIB, min(max_bytes, fits) // MIB * MIB)


def copy_bandwidth_gbps(buffer_bytes: int, seconds: float) -> float:
    """GB/s of one copy that reads ``buffer_bytes`` and writes as many (both counted)."""
    return 2.0 * buffer_bytes / seconds / 1e9


def measure_copy_bandwidth(torch: Any, device: Dict[str, Any], max_bytes: int, free_bytes: int, repeat_time_s: float,
                           repeats: int, max_iterations: int) -> Dict[str, Any]:
    buffer_bytes = copy_buffer_bytes(max_bytes, free_bytes)
    source = torch.rand(buffer_bytes // 4, device=device["torch_device"], dtype=torch.float32)
    destination = torch.empty_like(source)

    def copy() -> Any:
        return destination.copy_(source)
    try:
        single = time_per_iteration_s(torch, device, copy, 1, 2)
        iterations = iterations_for(repeat_time_s, single, 3, max_iterations)
        timings = repeat_s(torch, device, copy, 2, iterations, repeats)
    finally:
        del source, destination
    rates = [copy_bandwidth_gbps(buffer_bytes, seconds) for seconds in timings]
    return {
        "bandwidth_gbps": round(copy_bandwidth_gbps(buffer_bytes, statistics.median(timings)), 1),
        "repeats_gbps": [round(rate, 1) for rate in rates],
        "buffer_bytes": buffer_bytes,
        "iterations": iterations,
        "bytes_counted": "read + written: 2 x buffer_bytes per copy (Tensor.copy_ of float32 random data)",
    }
