"""Pure comparisons of one size: achieved bandwidth, its share of the membw plateau, predicted vs measured speed-up,
and a sentence saying why the two differ where they do. Nothing here imports torch.

Since both versions compute the same y, measured / predicted = (fused bytes / fused time) / (unfused bytes / unfused
time): the measured speed-up falls short of the traffic ratio exactly when the fused kernel moves its bytes more slowly
than the unfused chain moves its own, and exceeds it when the unfused chain is the slower mover.
"""
from __future__ import annotations

from typing import Optional

# Relative and absolute tolerance of |fused - unfused| <= atol + rtol x |unfused|, per dtype. The inputs lie in
# [0, 1), so nothing cancels; the unfused chain rounds to the dtype after each of its 4 kernels, the fused once.
TOLERANCES = {"bfloat16": (3.2e-2, 1e-3), "float16": (4e-3, 1e-4), "float32": (1e-5, 1e-6)}


def achieved_gbps(traffic_bytes: int, seconds: float) -> float:
    """GB/s (1e9 bytes) of the counted traffic."""
    return traffic_bytes / seconds / 1e9


def of_membw_pct(gbps: float, membw_gbps: Optional[float]) -> Optional[float]:
    return None if membw_gbps is None else 100.0 * gbps / membw_gbps


def speedup_gap_pct(predicted: float, measured: float) -> float:
    """How far the measured speed-up lies from the predicted one, in percent of the prediction (negative: short)."""
    return 100.0 * (measured - predicted) / predicted


def _pct(value: Optional[float]) -> str:
    return "%.0f %%" % value if value is not None else "unknown"


def explain(predicted: float, measured: float, tolerance_pct: float, unfused_gbps: float, fused_gbps: float,
            unfused_of_membw_pct: Optional[float], fused_of_membw_pct: Optional[float], bandwidth_bound_pct: float,
            kind: str, fused_working_set_bytes: int, cache_bytes: Optional[int]) -> str:
    """One sentence (or two) on predicted vs measured; the cause is read from how close each version gets to the
    copy plateau (bandwidth_bound_pct: below it a version is taken to be bound by something other than bytes)."""
    gap = speedup_gap_pct(predicted, measured)
    overhead = "kernel launches" if kind == "cuda" else "operator dispatches"
    cache = ""
    if cache_bytes is not None and fused_working_set_bytes <= cache_bytes:
        cache = (" The fused working set (%d bytes) fits in the %d-byte last-level cache, so repeated iterations may be "
                 "served from cache rather than device memory." % (fused_working_set_bytes, cache_bytes))
    known = unfused_of_membw_pct is not None and fused_of_membw_pct is not None
    if abs(gap) <= tolerance_pct and known and max(unfused_of_membw_pct, fused_of_membw_pct) < bandwidth_bound_pct:
        return ("measured %.2fx is within %g %% of the %.2fx the traffic ratio predicts, but neither version reaches %g %% "
                "of the membw copy plateau (unfused %s, fused %s): both are bound by per-call overhead (%s) rather than "
                "bytes, so the agreement says nothing about the traffic.%s"
                % (measured, tolerance_pct, predicted, bandwidth_bound_pct, _pct(unfused_of_membw_pct),
                   _pct(fused_of_membw_pct), overhead, cache))
    if abs(gap) <= tolerance_pct:
        return ("measured %.2fx is within %g %% of the %.2fx the traffic ratio predicts: both versions move their bytes "
                "at about the same rate (%.3g and %.3g GB/s), as bandwidth-bound kernels do.%s"
                % (measured, tolerance_pct, predicted, unfused_gbps, fused_gbps, cache))
    head = "measured %.2fx is %.0f %% %s the %.2fx the traffic ratio predicts" % (
        measured, abs(gap), "below" if gap < 0 else "above", predicted)
    if gap < 0:
        head += ": the fused kernel moves its bytes at %.3g GB/s, slower than the unfused chain's %.3g GB/s" % (
            fused_gbps, unfused_gbps)
        if not known:
            why = ("the membw plateau is unknown here, so which version is not bandwidth-bound is not decided; the usual "
                   "causes are per-call overhead at small N (%s, the compiled function's guards) or a fused kernel "
                   "that does not reach the copy rate" % overhead)
        elif unfused_of_membw_pct < bandwidth_bound_pct:
            why = ("neither version reaches %g %% of the membw copy plateau (unfused %s, fused %s): at this size the time "
                   "is set by per-call overhead (%s; the compiled function adds its guard checks) rather than by memory "
                   "traffic, so the traffic ratio does not predict the speed-up"
                   % (bandwidth_bound_pct, _pct(unfused_of_membw_pct), _pct(fused_of_membw_pct), overhead))
        elif fused_of_membw_pct < bandwidth_bound_pct:
            why = ("the unfused kernels reach %s of the membw copy plateau but the fused kernel only %s: it is not "
                   "bandwidth-bound at this size (the compiled function's per-call overhead, or the compute in its loop "
                   "such as gelu's erf), so it saves less time than it saves bytes"
                   % (_pct(unfused_of_membw_pct), _pct(fused_of_membw_pct)))
        else:
            why = ("the fused kernel reaches %s of the membw copy plateau against the unfused kernels' %s: the generated "
                   "kernel does not stream at the copy rate (its block size, vector width or the erf in its loop)"
                   % (_pct(fused_of_membw_pct), _pct(unfused_of_membw_pct)))
    else:
        head += ": the unfused chain moves its bytes at %.3g GB/s, slower than the fused kernel's %.3g GB/s" % (
            unfused_gbps, fused_gbps)
        if known and fused_of_membw_pct > 100.0:
            why = ("the fused kernel's rate is above the membw copy plateau (%s), so part of its traffic did not reach "
                   "device memory (cache)" % _pct(fused_of_membw_pct))
        elif known and unfused_of_membw_pct < bandwidth_bound_pct:
            why = ("the unfused chain reaches only %s of the membw copy plateau: its 4 %s per iteration, against the "
                   "fused version's 1, cost more than their bytes at this size, so fusing saves more than the traffic "
                   "ratio" % (_pct(unfused_of_membw_pct), overhead))
        else:
            shares = ("unfused %s, fused %s of the membw copy plateau" % (_pct(unfused_of_membw_pct), _pct(fused_of_membw_pct))
                      if known else "the membw plateau is unknown here")
            why = ("the unfused chain pays 4 %s and three intermediate allocations per iteration against the fused "
                   "version's one call, which cost more than the bytes those kernels move (%s)" % (overhead, shares))
    return "%s; %s.%s" % (head, why, cache)
