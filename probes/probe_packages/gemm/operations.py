"""The matmul of one case in one dtype, on random operands (torch is passed in, never imported here)."""
from __future__ import annotations

import contextlib
import math
from typing import Any, Callable, Dict, Iterator, Optional

from probe_packages.gemm.cases import GemmCase
from probe_packages.gemm.dtypes import DtypeSpec

TORCH_DTYPES = {"fp32": "float32", "tf32": "float32", "bf16": "bfloat16", "fp16": "float16"}


@contextlib.contextmanager
def matmul_precision(torch: Any, spec: DtypeSpec) -> Iterator[bool]:
    """TF32 on for tf32 only (off for fp32, where it would otherwise silently turn fp32 into tf32); restored after."""
    matmul = torch.backends.cuda.matmul
    previous = matmul.allow_tf32
    matmul.allow_tf32 = spec.name == "tf32"
    try:
        yield bool(matmul.allow_tf32)
    finally:
        matmul.allow_tf32 = previous


def runtime_unavailability(torch: Any, spec: DtypeSpec, torch_device: str) -> Optional[str]:
    """Why this torch build cannot run ``spec`` here, found by trying a tiny case (None: it ran)."""
    if spec.name == "fp8_e4m3":
        if not hasattr(torch, "float8_e4m3fn") or not hasattr(torch, "_scaled_mm"):
            return "this torch build (%s) has no float8_e4m3fn or torch._scaled_mm" % torch.__version__
    try:
        operation = build_operation(torch, spec, GemmCase("availability", "check", 16, 32, 32), torch_device, False)
        operation()
    except Exception as exc:  # the build or the device refuses the dtype
        return "a 16x32x32 %s matmul failed on %s: %s: %s" % (spec.name, torch_device, type(exc).__name__, str(exc).strip()[:300])
    return None


def operand_bytes(spec: DtypeSpec, case: GemmCase) -> int:
    """Device memory the case needs at its peak: operands, output, and (fp8) the bf16 staging of the inputs."""
    inputs = (case.m * case.k + case.k * case.n) * spec.input_bytes
    output = case.m * case.n * spec.output_bytes
    staging = max(case.m * case.k, case.k * case.n) * 2 * 2 if spec.name == "fp8_e4m3" else 0
    return inputs + 2 * output + staging


def build_operation(torch: Any, spec: DtypeSpec, case: GemmCase, torch_device: str, fp8_fast_accum: bool) -> Callable[[], Any]:
    """A no-argument callable doing C = A @ B once on random data (A ~ N(0,1); B scaled by 1/sqrt(K) so C ~ N(0,1))."""
    m, n, k = case.m, case.n, case.k
    scale = 1.0 / math.sqrt(k)
    if spec.name == "fp8_e4m3":
        fp8 = torch.float8_e4m3fn
        a = torch.randn(m, k, device=torch_device, dtype=torch.bfloat16).to(fp8)
        # _scaled_mm wants B column-major: a (K, N) view of a contiguous (N, K) tensor.
        b = torch.randn(k, n, device=torch_device, dtype=torch.bfloat16).to(fp8).t().contiguous().t()
        scale_a = torch.tensor(1.0, device=torch_device, dtype=torch.float32)
        scale_b = torch.tensor(scale, device=torch_device, dtype=torch.float32)

        def scaled() -> Any:
            return torch._scaled_mm(a, b, scale_a=scale_a, scale_b=scale_b, out_dtype=torch.bfloat16,
                                    use_fast_accum=fp8_fast_accum)
        return scaled
    dtype = getattr(torch, TORCH_DTYPES[spec.name])
    a = torch.randn(m, k, device=torch_device, dtype=dtype)
    b = torch.randn(k, n, device=torch_device, dtype=dtype).mul_(scale)

    def plain() -> Any:
        return torch.matmul(a, b)
    return plain


def output_check(torch: Any, result: Any) -> Dict[str, bool]:
    """Is the product after timing finite, and not all zeros (random operands must give a non-zero product)?"""
    return {"output_finite": bool(torch.isfinite(result).all().item()),
            "output_nonzero": bool((result != 0).any().item())}
