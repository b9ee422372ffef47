"""Roofline maths for one matmul, pure (no torch): work, minimum traffic, intensity, ridge, bound.

Conventions (also written into the probe's data):
- work = 2 * M * N * K floating-point operations (one multiply and one add per term);
- bytes moved = the minimum traffic: A (M x K) and B (K x N) read once in the input element size, C (M x N)
  written once in the output element size; fp8 e4m3 inputs are 1 byte each and their bf16 output 2 bytes;
- TFLOP/s = 1e12 FLOP/s; GB/s = 1e9 bytes/s;
- ridge = peak FLOP/s / bandwidth bytes/s (FLOP/byte); a shape whose intensity is below the ridge is memory-bound;
- attainable bound = min(peak, intensity x bandwidth).
"""
from __future__ import annotations

MEMORY_BOUND = "memory-bound"
COMPUTE_BOUND = "compute-bound"


def flop(m: int, n: int, k: int) -> int:
    return 2 * m * n * k


def bytes_moved(m: int, n: int, k: int, input_bytes: int, output_bytes: int) -> int:
    return (m * k + k * n) * input_bytes + m * n * output_bytes


def arithmetic_intensity(m: int, n: int, k: int, input_bytes: int, output_bytes: int) -> float:
    """FLOP per byte of minimum traffic."""
    return flop(m, n, k) / bytes_moved(m, n, k, input_bytes, output_bytes)


def ridge_flop_per_byte(peak_tflops: float, bandwidth_gbps: float) -> float:
    if peak_tflops <= 0 or bandwidth_gbps <= 0:
        raise ValueError("the peak and the bandwidth must be positive (got %r TFLOP/s, %r GB/s)" % (peak_tflops, bandwidth_gbps))
    return peak_tflops * 1e12 / (bandwidth_gbps * 1e9)


def classify(intensity: float, ridge: float) -> str:
    return MEMORY_BOUND if intensity < ridge else COMPUTE_BOUND


def memory_roof_tflops(intensity: float, bandwidth_gbps: float) -> float:
    """The rate memory allows at this intensity: intensity x bandwidth, in TFLOP/s."""
    return intensity * bandwidth_gbps * 1e9 / 1e12


def attainable_tflops(intensity: float, peak_tflops: float, bandwidth_gbps: float) -> float:
    return min(peak_tflops, memory_roof_tflops(intensity, bandwidth_gbps))


def tflops_of(m: int, n: int, k: int, seconds: float) -> float:
    if seconds <= 0:
        raise ValueError("a time per iteration must be positive, not %r" % seconds)
    return flop(m, n, k) / seconds / 1e12


def percent(part: float, whole: float) -> float:
    return 100.0 * part / whole
