"""The chain y = gelu(x * a + b) * c in torch: its inputs, the eager version (4 kernels), the compiled one."""
from __future__ import annotations

import importlib.util
import time
from typing import Any, Callable, Dict, Optional, Tuple

from probelib.fields import unavailable

BACKEND = "inductor"


def describe(exc: BaseException) -> str:
    return "%s: %s" % (type(exc).__name__, str(exc).strip()[:1500])


def chain(x: Any, a: Any, b: Any, c: Any) -> Any:
    """Four kernels in eager mode: each writes its intermediate, the next one reads it back."""
    import torch

    return torch.nn.functional.gelu(x * a + b) * c


def make_inputs(torch: Any, device: Dict[str, Any], elements: int, dtype: str) -> Tuple[Any, ...]:
    """x, a, b, c uniform in [0, 1): no cancellation anywhere in the chain, so a relative tolerance holds."""
    return tuple(torch.rand(elements, dtype=getattr(torch, dtype), device=device["torch_device"]) for unused in range(4))


def triton_version() -> Any:
    if importlib.util.find_spec("triton") is None:
        return unavailable("triton is not installed for this Python")
    try:
        import triton
        return str(triton.__version__)
    except Exception as exc:  # a broken triton is what inductor will meet too
        return unavailable("triton does not import: %s" % describe(exc))


class CompiledChain:
    """torch.compile(chain, backend inductor, fullgraph, static shapes), compiled afresh for each size.

    fullgraph and suppress_errors False make a compile failure raise instead of falling back to eager: the fused
    number is then absent, never the eager chain measured under another name.
    """

    def __init__(self, torch: Any) -> None:
        self.torch = torch
        self.failure: Optional[str] = None

    def compile_for(self, inputs: Tuple[Any, ...]) -> Tuple[Optional[Callable[[], Any]], Dict[str, Any]]:
        """(the compiled call bound to ``inputs``, or None; {compile_s, generated_kernels} or why it is unavailable)."""
        torch = self.torch
        try:
            # the wrapper compiles nothing until its first call, so the reset below still comes first
            compiled = torch.compile(chain, backend=BACKEND, fullgraph=True, dynamic=False)
            import torch._dynamo
            from torch._inductor import metrics
            torch._dynamo.config.suppress_errors = False
            torch._dynamo.reset()
            metrics.reset()
            started = time.perf_counter()
            compiled(*inputs)
            if inputs[0].is_cuda:
                torch.cuda.synchronize(inputs[0].device)
            compile_s = time.perf_counter() - started
            count = int(metrics.generated_kernel_count)
        except Exception as exc:  # no triton, no C++ compiler, an inductor bug: recorded in its own words
            self.failure = "torch.compile(backend=%r) failed: %s" % (BACKEND, describe(exc))
            return None, {"unavailable": self.failure}
        kernels: Any = count if count > 0 else unavailable(
            "inductor counted no generated kernel (its compiled code may have come from its on-disk cache)")
        return (lambda: compiled(*inputs)), {"compile_s": compile_s, "generated_kernels": kernels}
