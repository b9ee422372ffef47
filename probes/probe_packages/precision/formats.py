"""The representations measured, each a pure torch function of the float32 tensor (cast and back, or quantise and back).

fp16 and bf16: a cast and back, no scale. fp8 e4m3 (torch.float8_e4m3fn, max 448) and e5m2 (torch.float8_e5m2, max
57344): x / s clamped to +-max, cast and back, times s, with one per-tensor scale s = absmax / max. Symmetric int8
and int4: s = absmax / 127 (or / 7) for the whole tensor, or per row (channel) for per-channel; q = clamp(round(x / s),
-127, 127) * s (or +-7), round half to even as torch.round does. A scale of 0 (an all-zero tensor or row) becomes 1.
Scales are float32, stored once per tensor or per row: their cost is 32 bits spread over the elements they cover.
"""
from __future__ import annotations

import math
from typing import Any, Callable, Dict, List, NamedTuple

from probe_packages.precision.measures import error_summary

SCALE_BITS = 32


class Format(NamedTuple):
    name: str
    label: str
    bits_per_element: int
    granularity: str  # none | tensor | channel
    scale_note: str


FORMATS: List[Format] = [
    Format("fp16", "fp16", 16, "none", "no scale: a cast to float16 and back"),
    Format("bf16", "bf16", 16, "none", "no scale: a cast to bfloat16 and back"),
    Format("fp8_e4m3", "fp8 e4m3", 8, "tensor", "one float32 scale per tensor, absmax / 448 (float8_e4m3fn's largest value)"),
    Format("fp8_e5m2", "fp8 e5m2", 8, "tensor", "one float32 scale per tensor, absmax / 57344 (float8_e5m2's largest value)"),
    Format("int8_per_tensor", "int8 per-tensor", 8, "tensor", "one float32 scale per tensor, absmax / 127"),
    Format("int8_per_channel", "int8 per-channel", 8, "channel", "one float32 scale per row, row absmax / 127"),
    Format("int4_per_tensor", "int4 per-tensor", 4, "tensor", "one float32 scale per tensor, absmax / 7"),
    Format("int4_per_channel", "int4 per-channel", 4, "channel", "one float32 scale per row, row absmax / 7"),
]
FP8_MAX = {"fp8_e4m3": 448.0, "fp8_e5m2": 57344.0}
INT_MAX = {"int8": 127.0, "int4": 7.0}


def _nonzero_scale(torch: Any, scale: Any) -> Any:
    return torch.where(scale > 0, scale, torch.ones_like(scale))


def tensor_scale(torch: Any, x: Any, largest: float) -> Any:
    return _nonzero_scale(torch, x.abs().amax() / largest)


def row_scale(torch: Any, x: Any, largest: float) -> Any:
    """One scale per row (dim 0), shaped to broadcast over x."""
    rows = x.reshape(x.shape[0], -1).abs().amax(dim=1) / largest
    return _nonzero_scale(torch, rows).reshape((x.shape[0],) + (1,) * (x.dim() - 1))


def cast(torch: Any, x: Any, dtype: Any) -> Any:
    return x.to(dtype).to(torch.float32)


def fp8(torch: Any, x: Any, dtype: Any, largest: float) -> Any:
    scale = tensor_scale(torch, x, largest)
    return (x / scale).clamp(-largest, largest).to(dtype).to(torch.float32) * scale


def symmetric_int(torch: Any, x: Any, largest: float, per_channel: bool) -> Any:
    scale = row_scale(torch, x, largest) if per_channel else tensor_scale(torch, x, largest)
    return torch.round(x / scale).clamp(-largest, largest) * scale


def representers(torch: Any) -> Dict[str, Callable[[Any], Any]]:
    """Format name -> function from the float32 tensor to its representation, back in float32."""
    return {
        "fp16": lambda x: cast(torch, x, torch.float16),
        "bf16": lambda x: cast(torch, x, torch.bfloat16),
        "fp8_e4m3": lambda x: fp8(torch, x, torch.float8_e4m3fn, FP8_MAX["fp8_e4m3"]),
        "fp8_e5m2": lambda x: fp8(torch, x, torch.float8_e5m2, FP8_MAX["fp8_e5m2"]),
        "int8_per_tensor": lambda x: symmetric_int(torch, x, INT_MAX["int8"], False),
        "int8_per_channel": lambda x: symmetric_int(torch, x, INT_MAX["int8"], True),
        "int4_per_tensor": lambda x: symmetric_int(torch, x, INT_MAX["int4"], False),
        "int4_per_channel": lambda x: symmetric_int(torch, x, INT_MAX["int4"], True),
    }


def scale_bits_per_element(fmt: Format, shape: tuple) -> float:
    """The float32 scales' storage spread over the elements: 32 / numel per tensor, 32 / row length per channel."""
    numel = 1
    for size in shape:
        numel *= size
    if fmt.granularity == "tensor":
        return SCALE_BITS / numel
    if fmt.granularity == "channel":
        return SCALE_BITS * shape[0] / numel
    return 0.0


class Reference(NamedTuple):
    """The float32 tensor with what every format's error needs of it, computed once."""
    x: Any
    sum_x2: float
    nonzero: Any


def reference(torch: Any, x: Any) -> Reference:
    return Reference(x, float(torch.sum(x * x, dtype=torch.float64).item()), x != 0)


def error_sums(torch: Any, ref: Reference, q: Any) -> Dict[str, Any]:
    """sum x^2, sum (x - q)^2 (summed in float64), elements that overflowed to inf/NaN, nonzero elements flushed to zero.

    x - q and its square are float32: their rounding (2^-24 relative) is far below any error measured here.
    """
    difference = ref.x - q
    sum_e2 = float(torch.sum(difference * difference, dtype=torch.float64).item())
    overflow = 0 if math.isfinite(sum_e2) else int((~torch.isfinite(q)).sum().item())
    return {"sum_x2": ref.sum_x2, "sum_e2": sum_e2, "overflow_count": overflow,
            "flushed_to_zero_count": int((ref.nonzero & (q == 0)).sum().item())}


def measure(torch: Any, ref: Reference, fmt: Format) -> Dict[str, Any]:
    """One format's entry: width, scale cost, relative error, SQNR, exact, overflow and flush counts."""
    x = ref.x
    if fmt.granularity == "channel" and x.dim() < 2:
        raise ValueError("per-channel needs a channel axis; the tensor is %d-D" % x.dim())
    q = representers(torch)[fmt.name](x)
    sums = error_sums(torch, ref, q)
    scale_bits = scale_bits_per_element(fmt, tuple(x.shape))
    entry = {"format": fmt.name, "label": fmt.label, "bits_per_element": fmt.bits_per_element, "granularity": fmt.granularity,
             "scale_note": fmt.scale_note, "scale_bits_per_element": scale_bits,
             "effective_bits_per_element": fmt.bits_per_element + scale_bits}
    entry.update(error_summary(sums["sum_x2"], sums["sum_e2"]))
    entry["overflow_count"] = sums["overflow_count"]
    entry["flushed_to_zero_count"] = sums["flushed_to_zero_count"]
    return entry
