"""The load on one GPU, in its own thread: square products C = A @ B kept queued on a stream of that GPU until a
shared deadline, a CUDA event every few products (to bound the queue and to time them), every few checkpoints C compared
with the reference product (probe_packages.load.verify). torch is passed in."""
from __future__ import annotations

import threading
import time
from typing import Any, Callable, Dict, List, Optional

from probe_packages.load.plan import DTYPES
from probe_packages.load.rates import achieved, rate_after, series
from probe_packages.load.verify import Verification
from probelib.fields import unavailable

PRODUCTS_PER_CHECKPOINT = 8
QUEUED_CHECKPOINTS = 3
WARMUP_PRODUCTS = 3
READY_TIMEOUT_S = 300.0


class GpuLoad:
    """prepare() allocates and warms up, then signals ``ready``; the timed loop starts when ``go`` is set, with the
    load's origin and deadline (monotonic seconds) in ``timing``."""

    def __init__(self, torch: Any, index: int, plan: Dict[str, Any], go: threading.Event, timing: Dict[str, float],
                 operands: Any, clock: Callable[[], float] = time.monotonic) -> None:
        self.torch = torch
        self.operands = operands
        self.verification = Verification(torch, index, plan)
        self.index = index
        self.plan = plan
        self.go = go
        self.timing = timing
        self.clock = clock
        self.ready = threading.Event()
        self.error: Optional[str] = None
        self.stage = "not started"
        self.products = 0
        self.start_s: Optional[float] = None
        self.end_s: Optional[float] = None
        self.checkpoint_ms: List[float] = []
        self.output_finite: Any = unavailable("the load did not finish")
        self.thread = threading.Thread(target=self._run, name="load-gpu%d" % index, daemon=True)

    def start(self) -> "GpuLoad":
        self.thread.start()
        return self

    def _run(self) -> None:
        try:
            self._load()
        except Exception as exc:  # one GPU failing must not stop the others
            self.error = "%s: %s: %s" % (self.stage, type(exc).__name__, str(exc).strip()[:400])
        finally:
            self.ready.set()
            if self.end_s is None and "origin" in self.timing:
                self.end_s = round(self.clock() - self.timing["origin"], 3)

    def _load(self) -> None:
        torch = self.torch
        n = self.plan["matmul_n"]
        dtype = getattr(torch, DTYPES[self.plan["dtype"]])
        device = "cuda:%d" % self.index
        with torch.cuda.device(self.index):
            stream = torch.cuda.Stream(device=device)
            with torch.cuda.stream(stream):
                self.stage = "allocating three %dx%d %s matrices" % (n, n, self.plan["dtype"])
                a = torch.empty(n, n, device=device, dtype=dtype).copy_(self.operands[0])
                b = torch.empty(n, n, device=device, dtype=dtype).copy_(self.operands[1])
                c = torch.empty(n, n, device=device, dtype=dtype)
                self.stage = "warm-up products"
                for unused_warmup in range(WARMUP_PRODUCTS):
                    torch.matmul(a, b, out=c)
                self.stage = "the reference product"
                self.verification.prepare(a, b, c, stream)
                stream.synchronize()
                self.stage = "waiting for the other GPUs"
                self.ready.set()
                if not self.go.wait(READY_TIMEOUT_S) or "deadline" not in self.timing:
                    raise RuntimeError("the load was not started within %g s" % READY_TIMEOUT_S)
                self.stage = "timed products"
                self._timed(torch, stream, a, b, c)
                self.stage = "output check"
                self.output_finite = bool(torch.isfinite(c).all().item())
                self.stage = "done"

    def _timed(self, torch: Any, stream: Any, a: Any, b: Any, c: Any) -> None:
        start = torch.cuda.Event(enable_timing=True)
        start.record(stream)
        self.start_s = round(self.clock() - self.timing["origin"], 3)
        events = []
        deadline = self.timing["deadline"]
        while self.clock() < deadline:
            for unused_product in range(PRODUCTS_PER_CHECKPOINT):
                torch.matmul(a, b, out=c)
            self.products += PRODUCTS_PER_CHECKPOINT
            if self.verification.due(len(events) + 1):
                self.verification.queue(len(events) + 1, self.products, c, stream)
            event = torch.cuda.Event(enable_timing=True)
            event.record(stream)
            events.append(event)
            if len(events) > QUEUED_CHECKPOINTS:
                events[-1 - QUEUED_CHECKPOINTS].synchronize()
        stream.synchronize()
        self.end_s = round(self.clock() - self.timing["origin"], 3)
        self.checkpoint_ms = [start.elapsed_time(event) for event in events]

    def correctness(self) -> Dict[str, Any]:
        """The verification record, read after the thread ended (never from a thread that may still be running)."""
        if self.thread.is_alive():
            return unavailable("the load thread did not finish, so its checks were not read")
        if self.verification.reference is None:
            return unavailable("no reference product: %s" % (self.error or "the load did not reach its warm-up"))
        try:
            return self.verification.record(self.checkpoint_ms[-1] if self.checkpoint_ms else 0.0)
        except Exception as exc:  # a GPU that failed mid-load may fail the read too
            return unavailable("the checks could not be read: %s: %s" % (type(exc).__name__, str(exc).strip()[:300]))

    def result(self) -> Dict[str, Any]:
        """{products, timed_s, achieved_tflops, achieved_tflops_active, tflops_series, output_finite, start_s, end_s, error?}."""
        flop = self.plan["flop_per_product"]
        elapsed_ms = self.checkpoint_ms[-1] if self.checkpoint_ms else 0.0
        start_s = self.start_s if self.start_s is not None else 0.0
        entry: Dict[str, Any] = {
            "products": self.products if self.checkpoint_ms else 0,
            "products_per_checkpoint": PRODUCTS_PER_CHECKPOINT,
            "timed_s": round(elapsed_ms / 1000.0, 3),
            "achieved_tflops": achieved(self.products, elapsed_ms, flop) if self.checkpoint_ms
            else unavailable("no timed product completed"),
            "achieved_tflops_active": rate_after(self.checkpoint_ms, PRODUCTS_PER_CHECKPOINT, flop,
                                                 max(0.0, self.plan["warmup_s"] - start_s) * 1000.0),
            "tflops_series": series(self.checkpoint_ms, PRODUCTS_PER_CHECKPOINT, flop, start_s),
            "output_finite": self.output_finite,
            "start_s": self.start_s,
            "end_s": self.end_s,
        }
        if self.error:
            entry["error"] = self.error
        return entry
