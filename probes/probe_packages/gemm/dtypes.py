"""The dtypes the probe times, as data (no torch): element sizes, the operation, where each one can run."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Optional, Tuple

CPU_UNAVAILABLE = "no tensor cores on the CPU path"


@dataclass(frozen=True)
class DtypeSpec:
    name: str
    input_bytes: int
    output_bytes: int
    operation: str
    on_cpu: bool
    min_compute_capability: Optional[Tuple[int, int]]
    # cuBLAS(Lt) wants K and N (the leading dimensions of row-major A and B) to be multiples of this many
    # elements for its fast paths (16 bytes); torch._scaled_mm refuses fp8 operands that are not.
    alignment_elements: int
    hard_alignment: bool = False


DTYPES = {
    "fp32": DtypeSpec("fp32", 4, 4, "torch.matmul on float32 tensors, TF32 off (torch.backends.cuda.matmul.allow_tf32=False)",
                      True, None, 4),
    "tf32": DtypeSpec("tf32", 4, 4, "torch.matmul on float32 tensors, TF32 on (torch.backends.cuda.matmul.allow_tf32=True)",
                      False, (8, 0), 4),
    "bf16": DtypeSpec("bf16", 2, 2, "torch.matmul on bfloat16 tensors", True, None, 8),
    "fp16": DtypeSpec("fp16", 2, 2, "torch.matmul on float16 tensors", False, None, 8),
    "fp8_e4m3": DtypeSpec("fp8_e4m3", 1, 2,
                          "torch._scaled_mm on float8_e4m3fn inputs (B column-major), per-tensor float32 scales, bfloat16 output",
                          False, (8, 9), 16, hard_alignment=True),
}
DTYPE_NAMES = tuple(DTYPES)


def static_unavailability(spec: DtypeSpec, kind: str, compute_capability: Optional[Tuple[int, int]]) -> Optional[str]:
    """Why ``spec`` cannot run on this device, judged from the device alone (None: try it)."""
    if kind == "cpu":
        return None if spec.on_cpu else CPU_UNAVAILABLE
    if spec.min_compute_capability is not None and compute_capability is not None \
            and tuple(compute_capability) < spec.min_compute_capability:
        return "compute capability %d.%d is below %d.%d, the first with %s tensor cores" % (
            compute_capability[0], compute_capability[1], spec.min_compute_capability[0], spec.min_compute_capability[1],
            spec.name.split("_")[0].upper())
    return None


def shape_unavailability(spec: DtypeSpec, n: int, k: int) -> Optional[str]:
    """Why a shape cannot run in ``spec`` at all (only fp8 has a hard rule: K and N multiples of 16)."""
    if spec.hard_alignment and (k % spec.alignment_elements or n % spec.alignment_elements):
        return "torch._scaled_mm needs K and N to be multiples of %d for %s (K=%d, N=%d)" % (
            spec.alignment_elements, spec.name, k, n)
    return None
