"""Why a shape reached what it reached, in one sentence derived from its numbers (no torch).

Tile arithmetic assumes the 128 x 128 output tiles of the tensor-core kernels cuBLAS picks for large shapes; one
thread block (one tile) runs per SM at a time, so the tiles are worked off in waves of ``sm_count``.
"""
from __future__ import annotations

import math
from typing import List, Optional, Sequence

from probe_packages.gemm.roofline import COMPUTE_BOUND

FAR_BELOW_PCT = 60.0
NEAR_PEAK_PCT = 90.0
ABOVE_BOUND_PCT = 105.0
TILE = 128
LAUNCH_BOUND_S = 20e-6
WAVE_LOSS_PCT = 10.0
SLOWDOWN_NAMES = ("sw_power_cap", "hw_slowdown", "sw_thermal_slowdown", "hw_thermal_slowdown", "hw_power_brake_slowdown",
                  "board_limit", "reliability")


def output_tiles(m: int, n: int, tile: int = TILE) -> int:
    return math.ceil(m / tile) * math.ceil(n / tile)


def tile_fill_pct(m: int, n: int, tile: int = TILE) -> float:
    """Share of the computed tile area that is real output (the rest is padding of partial tiles)."""
    return 100.0 * m * n / (math.ceil(m / tile) * tile * math.ceil(n / tile) * tile)


def wave_loss_pct(tiles: int, sm_count: int) -> float:
    """Share of SM-slots idle in the waves (tiles / sm_count rounded up) that the tiles need."""
    waves = math.ceil(tiles / sm_count)
    return 100.0 * (1.0 - tiles / (waves * sm_count))


def _dims_not_multiple(dims: Sequence[tuple], multiple: int) -> List[str]:
    return ["%s=%d" % (label, value) for label, value in dims if value % multiple]


def gpu_causes(m: int, n: int, k: int, dtype: str, alignment_elements: int, input_bytes: int, sm_count: Optional[int]) -> List[str]:
    """The tiling, alignment and occupancy facts of a GPU shape that cost tensor-core rate."""
    causes = []
    misaligned = _dims_not_multiple((("K", k), ("N", n)), alignment_elements)
    if misaligned:
        causes.append("%s not a multiple of %d (%d bytes of %s): rows are not 16-byte aligned, so cuBLAS cannot use its "
                      "vectorised tensor-core loads" % (" and ".join(misaligned) + (" is" if len(misaligned) == 1 else " are"),
                                                        alignment_elements, alignment_elements * input_bytes, dtype))
    untiled = _dims_not_multiple((("M", m), ("N", n), ("K", k)), TILE)
    if untiled:
        causes.append("tile quantisation: %s not a multiple of %d (the computed tiles are %.1f %% real output)"
                      % (", ".join(untiled) + (" is" if len(untiled) == 1 else " are"), TILE, tile_fill_pct(m, n)))
    if sm_count:
        tiles = output_tiles(m, n)
        if tiles < sm_count:
            small = ["%s=%d" % (label, value) for label, value in (("M", m), ("N", n)) if value < TILE]
            causes.append("too few tiles to fill %d SMs: %s gives %d output tile%s of %dx%d" % (
                sm_count, ", ".join(small) or "M=%d, N=%d" % (m, n), tiles, "" if tiles == 1 else "s", TILE, TILE))
        elif wave_loss_pct(tiles, sm_count) >= WAVE_LOSS_PCT:
            causes.append("wave quantisation: %d tiles on %d SMs need %d waves, the last %d %% empty" % (
                tiles, sm_count, math.ceil(tiles / sm_count), round(100.0 * (1 - (tiles % sm_count) / sm_count))))
    return causes


def launch_cause(time_per_iteration_s: float) -> Optional[str]:
    if time_per_iteration_s < LAUNCH_BOUND_S:
        return ("launch overhead dominates: one matmul takes %.1f us, close to the few microseconds the host needs to "
                "launch a kernel" % (time_per_iteration_s * 1e6))
    return None


def slowdown_cause(clock_event_names: Sequence[str], sm_clock_mhz: Optional[int]) -> Optional[str]:
    active = [name for name in clock_event_names if name in SLOWDOWN_NAMES]
    if not active:
        return None
    return "the clocks were held down during the run (%s%s)" % (
        ", ".join(active), "" if sm_clock_mhz is None else ", SM clock %d MHz" % sm_clock_mhz)


def explain(*, kind: str, classification: str, m: int, n: int, k: int, dtype: str, alignment_elements: int,
            input_bytes: int, tflops: float, attainable_tflops: float, bandwidth_gbps: float, bytes_moved: int,
            time_per_iteration_s: float, sm_count: Optional[int] = None, l2_cache_bytes: Optional[int] = None,
            clock_event_names: Sequence[str] = (), sm_clock_mhz: Optional[int] = None) -> str:
    """One sentence: how much of its bound the shape reached and, when far below it (or above a memory bound), why."""
    fraction = 100.0 * tflops / attainable_tflops
    bound = "compute" if classification == COMPUTE_BOUND else "memory"
    drawn_gbps = bytes_moved / time_per_iteration_s / 1e9
    if classification != COMPUTE_BOUND and fraction > ABOVE_BOUND_PCT:
        if l2_cache_bytes and bytes_moved <= l2_cache_bytes:
            return ("%.0f %% of its memory bound: its %.1f MiB of operands fit in the %.0f MiB L2 cache, so memory bandwidth "
                    "does not limit it." % (fraction, bytes_moved / 2 ** 20, l2_cache_bytes / 2 ** 20))
        return ("%.0f %% of its memory bound: it moved at least %.0f GB/s, more than the %.0f GB/s used for the ridge "
                "(caches serve part of the traffic, or the bandwidth given is low)." % (fraction, drawn_gbps, bandwidth_gbps))
    if fraction >= FAR_BELOW_PCT:
        # Not far below, but short of the peak: a power or thermal cap is the usual reason, and it is measured.
        slowdown = slowdown_cause(clock_event_names, sm_clock_mhz) if bound == "compute" and fraction < NEAR_PEAK_PCT else None
        return "%.0f %% of its %s bound (%.4g TFLOP/s)%s." % (fraction, bound, attainable_tflops, ": " + slowdown if slowdown else "")
    causes: List[str] = []
    launch = launch_cause(time_per_iteration_s)
    if launch:
        causes.append(launch)
    if classification == COMPUTE_BOUND:
        if kind == "cuda":
            causes.extend(gpu_causes(m, n, k, dtype, alignment_elements, input_bytes, sm_count))
    else:
        causes.append("it drew %.0f GB/s of the %.0f GB/s the ridge assumes: a matrix-vector-like shape (M=%d) does not "
                      "stream memory at copy speed" % (drawn_gbps, bandwidth_gbps, m))
    slowdown = slowdown_cause(clock_event_names, sm_clock_mhz)
    if slowdown:
        causes.append(slowdown)
    if not causes:
        causes.append("no tiling, alignment, size or clock cause shows in the numbers: compare with the same shape on a "
                      "healthy %s" % ("GPU of this SKU" if kind == "cuda" else "machine"))
    return "%.0f %% of its %s bound (%.4g TFLOP/s): %s." % (fraction, bound, attainable_tflops, "; ".join(causes))
