"""The copies and their timing: H2D and D2H from pinned and pageable host memory, pinned bidirectional, host-to-host.

Every buffer holds random float32 data; after the timed copies a sample of elements is compared with the source.
"""
from __future__ import annotations

import statistics
import traceback
from typing import Any, Callable, Dict, List, Optional, Tuple

from probe_packages.hostbw.stats import summarize
from probelib.measure.timing import repeat_s

FLOAT32_BYTES = 4
CPU_NOTE = "no GPU: host-to-host copy, not PCIe (torch tensor.copy_ between two pageable host buffers)"


def sample_indices(numel: int, count: int) -> List[int]:
    """``count`` indices spread evenly over [0, numel), the first and the last included."""
    if numel < 1 or count < 1:
        raise ValueError("need at least one element and one sample")
    if count >= numel:
        return list(range(numel))
    if count == 1:
        return [0]
    return sorted({(index * (numel - 1)) // (count - 1) for index in range(count)})


def check_copy(torch: Any, destination: Any, source: Any, indices: Any) -> Dict[str, Any]:
    """Compare ``destination`` with ``source`` at ``indices`` (on the host); exact equality, a copy changes nothing."""
    copied = destination[indices.to(destination.device)].cpu()
    expected = source[indices.to(source.device)].cpu()
    mismatched = int((copied != expected).sum().item())
    return {"checked_elements": int(indices.numel()), "mismatched_elements": mismatched, "ok": mismatched == 0}


def failed(direction: str, host_memory: str, exc: BaseException) -> Dict[str, Any]:
    text = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
    return {"direction": direction, "host_memory": host_memory,
            "error": ("%s: %s" % (type(exc).__name__, text)) if text else type(exc).__name__,
            "traceback": traceback.format_exc(limit=8)[-2000:]}


def attempt(direction: str, host_memory: str, measure: Callable[[], Dict[str, Any]]) -> Dict[str, Any]:
    try:
        return measure()
    except Exception as exc:  # one failing copy is recorded; the others still run
        return failed(direction, host_memory, exc)


def _result(direction: str, host_memory: str, size_bytes: int, plan: Dict[str, Any], timings: List[float],
            check: Dict[str, Any]) -> Dict[str, Any]:
    result = {"direction": direction, "host_memory": host_memory, "bytes_per_copy": size_bytes,
              "copies_per_repeat": plan["iterations"]}
    result.update(summarize(size_bytes, timings))
    result["data_check"] = check
    return result


class GpuCopies:
    """The buffers of one GPU's measurement: ``source`` (random, stays), ``target`` (overwritten), host buffers."""

    def __init__(self, torch: Any, device: Dict[str, Any], plan: Dict[str, Any], size_bytes: int, check_count: int):
        self.torch, self.device, self.plan, self.size_bytes = torch, device, plan, size_bytes
        self.numel = size_bytes // FLOAT32_BYTES
        where = torch.device(device["torch_device"])
        self.indices = torch.tensor(sample_indices(self.numel, check_count), dtype=torch.long)
        self.source = torch.rand(self.numel, device=where)
        self.target = torch.empty(self.numel, device=where)

    def host_buffer(self, pinned: bool) -> Any:
        """A host buffer filled from the GPU: the copying (pinned) thread touches its pages first."""
        host = self.torch.empty(self.numel, pin_memory=pinned)
        host.copy_(self.source)
        self.torch.cuda.synchronize(self.device["index"])
        return host

    def _timed(self, operation: Callable[[], Any]) -> List[float]:
        plan = self.plan
        return repeat_s(self.torch, self.device, operation, plan["warmup"], plan["iterations"], plan["repeats"])

    def h2d(self, host: Any, pinned: bool) -> Dict[str, Any]:
        target = self.target
        target.fill_(-1.0)
        timings = self._timed(lambda: target.copy_(host, non_blocking=pinned))
        self.torch.cuda.synchronize(self.device["index"])
        return _result("h2d", "pinned" if pinned else "pageable", self.size_bytes, self.plan, timings,
                       check_copy(self.torch, target, host, self.indices))

    def d2h(self, host: Any, pinned: bool) -> Dict[str, Any]:
        target = self.target
        target.uniform_(1.0, 2.0)  # differs from what the host buffer holds, so a copy that did not happen shows
        timings = self._timed(lambda: host.copy_(target, non_blocking=pinned))
        self.torch.cuda.synchronize(self.device["index"])
        return _result("d2h", "pinned" if pinned else "pageable", self.size_bytes, self.plan, timings,
                       check_copy(self.torch, host, target, self.indices))

    def bidirectional(self, host_out: Any) -> Dict[str, Any]:
        """H2D (host_out -> target) and D2H (source -> a second pinned buffer) at once, each on its own stream."""
        torch, plan = self.torch, self.plan
        host_in = torch.empty(self.numel, pin_memory=True)
        host_in.fill_(-1.0)
        self.target.fill_(-1.0)
        torch.cuda.synchronize(self.device["index"])
        totals, h2d_rates, d2h_rates = [], [], []
        for repeat in range(plan["repeats"]):
            h2d_s, d2h_s = time_two_streams_s(
                torch, self.device["index"], lambda: self.target.copy_(host_out, non_blocking=True),
                lambda: host_in.copy_(self.source, non_blocking=True), plan["warmup"] if repeat == 0 else 1,
                plan["iterations"])
            totals.append(max(h2d_s, d2h_s))
            h2d_rates.append(self.size_bytes / h2d_s / 1e9)
            d2h_rates.append(self.size_bytes / d2h_s / 1e9)
        torch.cuda.synchronize(self.device["index"])
        checks = [check_copy(torch, self.target, host_out, self.indices), check_copy(torch, host_in, self.source, self.indices)]
        result = _result("bidirectional", "pinned", self.size_bytes, plan, totals, merge_checks(checks))
        result.update(summarize(2 * self.size_bytes, totals))
        result["h2d_gbps"] = round(statistics.median(h2d_rates), 3)
        result["d2h_gbps"] = round(statistics.median(d2h_rates), 3)
        result["note"] = ("median_gbps sums both directions: 2 x bytes_per_copy per iteration over the time until "
                          "both streams finished; h2d_gbps and d2h_gbps time each stream alone")
        return result


def merge_checks(checks: List[Dict[str, Any]]) -> Dict[str, Any]:
    checked = sum(check["checked_elements"] for check in checks)
    mismatched = sum(check["mismatched_elements"] for check in checks)
    return {"checked_elements": checked, "mismatched_elements": mismatched, "ok": mismatched == 0}


def time_two_streams_s(torch: Any, index: int, first: Callable[[], Any], second: Callable[[], Any],
                       warmup: int, iterations: int) -> Tuple[float, float]:
    """Seconds per iteration of ``first`` on one stream and ``second`` on another, both started by one event."""
    with torch.cuda.device(index):
        first_stream, second_stream = torch.cuda.Stream(), torch.cuda.Stream()
        for unused_call in range(warmup):
            with torch.cuda.stream(first_stream):
                first()
            with torch.cuda.stream(second_stream):
                second()
        torch.cuda.synchronize()
        start = torch.cuda.Event(enable_timing=True)
        first_end, second_end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record(torch.cuda.current_stream())
        first_stream.wait_event(start)
        second_stream.wait_event(start)
        for unused_call in range(iterations):
            with torch.cuda.stream(first_stream):
                first()
            with torch.cuda.stream(second_stream):
                second()
        first_end.record(first_stream)
        second_end.record(second_stream)
        first_end.synchronize()
        second_end.synchronize()
        return (start.elapsed_time(first_end) / 1000.0 / iterations,
                start.elapsed_time(second_end) / 1000.0 / iterations)


def measure_gpu(torch: Any, device: Dict[str, Any], plan: Dict[str, Any], size_bytes: int, check_count: int,
                after_pinned: Optional[Callable[[], Any]] = None) -> Tuple[List[Dict[str, Any]], Any]:
    """Every copy of the plan on one GPU; returns (results, what ``after_pinned`` read right after the pinned copies)."""
    copies = GpuCopies(torch, device, plan, size_bytes, check_count)
    results: List[Dict[str, Any]] = []
    link_after = None
    for host_memory in plan["host_memory"]:
        pinned = host_memory == "pinned"
        try:
            host = copies.host_buffer(pinned)
        except Exception as exc:  # e.g. pinning refused; the pageable copies still run
            results.extend(failed(direction, host_memory, exc) for direction in plan["directions"])
            continue
        results.append(attempt("h2d", host_memory, lambda: copies.h2d(host, pinned)))
        results.append(attempt("d2h", host_memory, lambda: copies.d2h(host, pinned)))
        if pinned and after_pinned is not None:
            link_after = after_pinned()
        if pinned and plan["bidirectional"]:
            results.append(attempt("bidirectional", "pinned", lambda: copies.bidirectional(host)))
        del host
    del copies
    return results, link_after


def measure_cpu(torch: Any, device: Dict[str, Any], plan: Dict[str, Any], size_bytes: int,
                check_count: int, ready: Optional[Callable[[], Any]] = None) -> List[Dict[str, Any]]:
    """The CPU path: tensor.copy_ between two pageable host buffers, so the pipeline runs for real without a GPU.
    ``ready()`` runs once the buffers are filled, before the timing (a together worker's start line)."""
    numel = size_bytes // FLOAT32_BYTES
    indices = torch.tensor(sample_indices(numel, check_count), dtype=torch.long)
    source = torch.rand(numel)
    target = torch.empty(numel)
    target.fill_(-1.0)
    if ready is not None:
        ready()

    def measure() -> Dict[str, Any]:
        timings = repeat_s(torch, device, lambda: target.copy_(source), plan["warmup"], plan["iterations"], plan["repeats"])
        result = _result("h2h", "pageable", size_bytes, plan, timings, check_copy(torch, target, source, indices))
        result["note"] = CPU_NOTE
        return result

    return [attempt("h2h", "pageable", measure)]
