"""The copy itself: random buffers, one checked copy, calibration of the iteration count, timed copies, the headline
repeats (the alone phase and each together worker time them the same way)."""
from __future__ import annotations

from functools import partial
from typing import Any, Callable, Dict, List, Optional, Tuple

from probe_packages.membw.plan import MIB, bandwidth_gbps
from probelib.measure.timing import iterations_for, time_per_iteration_s


class CopyBuffers:
    """Two buffers of ``size_mib`` on the device: src holds random data, dst receives ``dst.copy_(src)``."""

    def __init__(self, torch: Any, device: Dict[str, Any], size_mib: int, dtype: str) -> None:
        self.torch = torch
        self.device = device
        self.dtype = dtype
        self.buffer_bytes = size_mib * MIB
        where = device["torch_device"]
        if dtype == "uint8":
            self.src = torch.randint(0, 256, (self.buffer_bytes,), dtype=torch.uint8, device=where)
        else:
            self.src = torch.rand(self.buffer_bytes // 4, dtype=torch.float32, device=where)
        self.dst = torch.empty_like(self.src)

    def copy(self) -> None:
        self.dst.copy_(self.src)

    def verify(self, sample_elements: int) -> Tuple[bool, int]:
        """Make dst differ from src everywhere, copy once, compare evenly spaced elements (and the last one)."""
        torch = self.torch
        if self.dtype == "uint8":
            torch.bitwise_not(self.src, out=self.dst)
        else:
            torch.neg(self.src, out=self.dst)
            self.dst.sub_(1.0)  # src is in [0, 1), so every element of dst is now in (-2, -1]
        self.copy()
        count = self.src.numel()
        step = max(1, count // sample_elements)
        index = torch.arange(0, count, step, device=self.src.device)
        if int(index[-1]) != count - 1:
            index = torch.cat([index, torch.tensor([count - 1], device=self.src.device)])
        same = bool(torch.equal(self.dst.index_select(0, index), self.src.index_select(0, index)))
        return same, int(index.numel())

    def release(self) -> None:
        self.src = None
        self.dst = None
        if self.device["kind"] == "cuda":
            self.torch.cuda.synchronize(self.device["index"])
            self.torch.cuda.empty_cache()


def calibrate(torch: Any, device: Dict[str, Any], buffers: CopyBuffers, plan: Dict[str, Any]) -> int:
    """Iterations that make one timing last about the plan's target: time a few copies, grow until measurable."""
    target_s = plan["target_point_ms"] / 1000.0
    count = 1
    per_copy = time_per_iteration_s(torch, device, buffers.copy, plan["warmup_iterations"], count)
    while per_copy * count < target_s / 10.0 and count < plan["max_iterations"]:
        count = min(plan["max_iterations"], max(count * 10, int(target_s / 10.0 / max(per_copy, 1e-9))))
        per_copy = time_per_iteration_s(torch, device, buffers.copy, 1, count)
    return iterations_for(target_s, per_copy, plan["min_iterations"], plan["max_iterations"])


def timed(torch: Any, device: Dict[str, Any], buffers: CopyBuffers, iterations: int, warmup: int) -> Dict[str, float]:
    seconds = time_per_iteration_s(torch, device, buffers.copy, warmup, iterations)
    return {"time_per_copy_s": seconds, "bandwidth_gbps": bandwidth_gbps(buffers.buffer_bytes, seconds)}


# watch(repeat index, the timing) -> seconds per copy: runs the timing, doing what it must around it.
Watch = Callable[[int, Callable[[], float]], float]


def timed_repeats(torch: Any, device: Dict[str, Any], buffers: CopyBuffers, iterations: int, plan: Dict[str, Any],
                  watch: Optional[Watch] = None) -> List[float]:
    """Seconds per copy of plan["repeats"] independent timings of ``iterations`` copies each, after
    plan["warmup_iterations"] copies before the first and one before each later one."""
    seconds = []
    for repeat in range(plan["repeats"]):
        timing = partial(time_per_iteration_s, torch, device, buffers.copy,
                         plan["warmup_iterations"] if repeat == 0 else 1, iterations)
        seconds.append(watch(repeat, timing) if watch is not None else timing())
    return seconds
