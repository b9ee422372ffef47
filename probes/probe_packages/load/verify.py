"""Correctness under the load: the same seeded operands on every GPU, a reference product computed on each before the
load (with its sha256, compared across GPUs by the judge), and every few checkpoints the running product compared with
the reference on the GPU's own stream, read back only after the load so the queue never waits for it. torch is passed in.
"""
from __future__ import annotations

import time
from typing import Any, Dict, List, Optional, Tuple

from probelib.fields import unavailable
from probelib.measure import bit_compare

KEPT_MISMATCHES = 10


def _generated(torch: Any, n: int, dtype: Any, seed: int, where: str) -> Tuple[Any, Any]:
    generator = torch.Generator(device=where).manual_seed(seed)
    a = torch.randn(n, n, generator=generator, device=where, dtype=torch.float32).to(dtype)
    b = torch.randn(n, n, generator=generator, device=where, dtype=torch.float32).mul_(n ** -0.5).to(dtype)
    return a, b


def seeded_operands(torch: Any, n: int, dtype: Any, seed: int, first_gpu: int) -> Tuple[Any, Any, float, str]:
    """(A, B, seconds, where) from one seeded generator: A ~ N(0, 1), B ~ N(0, 1/n) so that C = A @ B ~ N(0, 1), cast to
    the load's dtype; made once on the first GPU (milliseconds; the CPU takes about a second for n 8192) and copied by
    every GPU's thread, so every GPU multiplies the same bits. A first GPU that cannot make them: the CPU does."""
    begun = time.perf_counter()
    where = "cuda:%d" % first_gpu
    try:
        a, b = _generated(torch, n, dtype, seed, where)
        torch.cuda.synchronize(first_gpu)  # the other GPUs' streams copy them
    except Exception:  # a broken first GPU: its own load records why
        begun, where = time.perf_counter(), "cpu"
        a, b = _generated(torch, n, dtype, seed, where)
    return a, b, round(time.perf_counter() - begun, 3), where


class Verification:
    """One GPU's checks. ``prepare`` computes the reference (after the warm-up, into the load's own output) and decides
    the mode from a second product at rest; ``due`` says which checkpoints are checked; ``queue`` compares without
    waiting; ``record`` reads every check back after the load."""

    def __init__(self, torch: Any, index: int, plan: Dict[str, Any]) -> None:
        self.torch = torch
        self.index = index
        self.every = int(plan["verify_every_checkpoints"])
        injection = plan.get("inject_bit_flip")
        self.injection = injection if isinstance(injection, dict) and injection.get("gpu") == index else None
        self.reference: Any = None
        self.columns = int(plan["matmul_n"])
        self.rest: Dict[str, Any] = {}
        self.digest: Any = unavailable("the reference product was not computed")
        self.pending: List[Tuple[int, int, Dict[str, Any], Any, Any]] = []
        self.error: Optional[str] = None
        self.sm_count: Optional[int] = None

    def prepare(self, a: Any, b: Any, c: Any, stream: Any) -> None:
        """C = A @ B once more into the load's output: the reference, its digest, and a second product compared with it."""
        torch = self.torch
        torch.matmul(a, b, out=c)
        stream.synchronize()
        self.reference = c.clone()
        properties = torch.cuda.get_device_properties(self.index)
        self.sm_count = getattr(properties, "multi_processor_count", None)
        self.digest = bit_compare.sha256_of(torch, self.reference)
        torch.matmul(a, b, out=c)
        second = bit_compare.compare(torch, c, self.reference)
        self.rest = bit_compare.at_rest(second, bit_compare.tolerance_for(torch, self.reference) if not second["equal"] else 0.0)

    def due(self, checkpoint: int) -> bool:
        """Checkpoint numbers start at 1; every ``every``-th is checked."""
        return self.reference is not None and checkpoint % self.every == 0

    def queue(self, checkpoint: int, product: int, c: Any, stream: Any) -> None:
        """Compare C (the product just queued) with the reference on the stream, timed by two events; the injected flip,
        when this is its check, goes into C first."""
        torch = self.torch
        number = len(self.pending) + 1
        began = torch.cuda.Event(enable_timing=True)
        ended = torch.cuda.Event(enable_timing=True)
        began.record(stream)
        if self.injection is not None and self.injection.get("check") == number:
            bit_compare.flip_bit(torch, c, int(self.injection.get("element", 0)), int(self.injection.get("bit", 0)))
        pending = bit_compare.queue(torch, c, self.reference, self.rest.get("tolerance"))
        ended.record(stream)
        self.pending.append((number, product, pending, began, ended))

    def record(self, window_ms: float) -> Dict[str, Any]:
        """The GPU's correctness record (after the load's stream has finished)."""
        if self.reference is None:
            return unavailable(self.error or "the reference product was not computed: the load did not reach its warm-up")
        mismatches: List[Dict[str, Any]] = []
        mismatching_checks = 0
        mismatching_elements = 0
        gpu_ms = 0.0
        for number, product, pending, began, ended in self.pending:
            outcome = bit_compare.read(pending, self.columns)
            gpu_ms += began.elapsed_time(ended)
            if not outcome["equal"]:
                mismatching_checks += 1
                mismatching_elements += outcome["differing_elements"]
                entry = {"check": number, "product": product}
                entry.update({key: value for key, value in outcome.items() if key != "equal"})
                bit_compare.kept(mismatches, entry, KEPT_MISMATCHES)
        record: Dict[str, Any] = {
            "reference_sha256": self.digest,
            "multi_processor_count": self.sm_count if isinstance(self.sm_count, int) else unavailable("torch does not report it"),
            "checks_run": len(self.pending),
            "every_checkpoints": self.every,
            "mismatching_checks": mismatching_checks,
            "mismatching_elements": mismatching_elements,
            "mismatches": mismatches,
            "check_gpu_ms": round(gpu_ms, 3),
            "check_cost_pct": round(100.0 * gpu_ms / window_ms, 3) if window_ms > 0 else unavailable("no timed window"),
        }
        record.update(self.rest)
        if self.injection is not None:
            record["injected"] = dict(self.injection)
        return record
