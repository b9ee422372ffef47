"""One worker of gemm's together phase (run in its own process by probelib.measure.together): the calibration shape's
sustained windows of each dtype, with the sustained method of the alone phase (probe_packages.gemm.power_run), and NVML's
clock-event duration counters read just before the first settle and just after the last window.

Everything that takes time before the measurement (torch, NVML, the operands, cuBLAS's first call of each dtype) is
done before ``start()``, so that the workers' windows overlap. A worker sharing its device with others sizes by its
share (probelib.measure.phases).
"""
from __future__ import annotations

import time
from typing import Any, Callable, Dict, List, Optional, Tuple

from probe_packages.gemm.cases import GemmCase
from probe_packages.gemm.dtypes import DTYPES, shape_unavailability, static_unavailability
from probe_packages.gemm.operations import build_operation, matmul_precision, operand_bytes, runtime_unavailability
from probe_packages.gemm.power_run import PowerStateRun
from probe_packages.gemm.sweep import _capability, _describe
from probelib.fields import unavailable
from probelib.measure.phases import take_share

NOT_A_GPU = "not a GPU: the CPU has no clock-event duration counters"
DEVICE_KEYS = ("kind", "index", "name", "uuid")


def prepare(torch: Any, device: Dict[str, Any], case: GemmCase, dtype: str, share_bytes: float,
            fp8_fast_accum: bool) -> Tuple[Optional[Callable[[], Any]], Any]:
    """(the operation, None) ready to time, warmed up once; or (None, why it cannot run here)."""
    spec = DTYPES[dtype]
    reason = static_unavailability(spec, device["kind"], _capability(device)) or shape_unavailability(spec, case.n, case.k)
    if reason is None and operand_bytes(spec, case) > 0.9 * share_bytes:
        reason = "needs %.0f MiB, this worker's share is %.0f MiB" % (operand_bytes(spec, case) / 2 ** 20, share_bytes / 2 ** 20)
    if reason is None:
        reason = runtime_unavailability(torch, spec, device["torch_device"])
    if reason is not None:
        return None, unavailable(reason)
    with matmul_precision(torch, spec):
        operation = build_operation(torch, spec, case, device["torch_device"], fp8_fast_accum)
        operation()  # the first call picks cuBLAS's kernel: before the start line, not inside a window
    return operation, None


class NvmlSide:
    """The worker's own NVML session (None off a GPU or where NVML is not usable): the sampler's reads and the
    clock-event duration counters of its GPU."""

    def __init__(self, device: Dict[str, Any]) -> None:
        self.snapshots: Any = None
        self.reads: Any = None
        self.counters: Any = None
        if device["kind"] != "cuda":
            return
        from probelib.measure.gpu_snapshot import GpuSnapshots
        from probelib.nvml.clock_event_durations import WindowCounters
        self.snapshots = GpuSnapshots()
        self.reads = self.snapshots.reads(device["uuid"])
        if self.reads is not None:
            self.counters = WindowCounters({"gpu": (self.reads.reader, self.reads.handle)}, time.monotonic)
        self.why = self.snapshots.session.reason or "no NVML device has the UUID %r that torch reported" % (device["uuid"],)

    def window(self) -> Any:
        if self.counters is None:
            return unavailable(NOT_A_GPU if self.snapshots is None else "NVML is not usable: %s" % self.why)
        return self.counters.deltas("gpu")

    def close(self) -> None:
        if self.snapshots is not None:
            self.snapshots.close()


def sustained_worker(device: Dict[str, Any], worker: Dict[str, Any], args: Dict[str, Any],
                     start: Callable[[], float]) -> Dict[str, Any]:
    """{"device", "case", "sustained": {dtype: the sustained record or unavailable}, "clock_event_durations_window",
    "share"} of one worker (probelib.measure.together's task signature)."""
    import torch

    case = GemmCase(**args["case"])
    dtypes: List[str] = list(args["dtypes"])
    share = take_share(torch, device, worker["workers_on_device"])
    share_bytes = float(share["memory_bytes"])
    nvml = NvmlSide(device)
    try:
        operations: Dict[str, Any] = {}
        sustained: Dict[str, Any] = {}
        for dtype in dtypes:
            try:
                operations[dtype], why = prepare(torch, device, case, dtype, share_bytes, bool(args["fp8_fast_accum"]))
            except Exception as exc:  # one dtype fails alone
                operations[dtype], why = None, unavailable("failed before the start line: %s" % _describe(exc))
            if why is not None:
                sustained[dtype] = why
        start()
        if nvml.counters is not None:
            nvml.counters.start()
        for dtype in dtypes:
            if operations.get(dtype) is None:
                continue
            run = PowerStateRun(torch, device, case, nvml.reads, args["settings"])
            try:
                with matmul_precision(torch, DTYPES[dtype]):
                    sustained[dtype] = run.sustained(operations[dtype], int(args["repeats"]))
            except Exception as exc:  # one dtype fails alone
                sustained[dtype] = unavailable("failed: %s" % _describe(exc))
            operations[dtype] = None
        if nvml.counters is not None:
            nvml.counters.end()
        return {"device": {key: device.get(key) for key in DEVICE_KEYS}, "case": case.name,
                "sustained": {dtype: sustained[dtype] for dtype in dtypes}, "clock_event_durations_window": nvml.window(),
                "share": share}
    finally:
        nvml.close()
