"""The knee of an all-reduce curve under the model t(s) = startup + s / plateau_algbw. Pure Python.

Below the knee a message's time is mostly the fixed startup cost (launch, synchronisation, protocol
handshakes); above it the bytes dominate and algbw approaches the plateau. At s = knee the two halves are
equal, so algbw there is half the plateau.
"""
from __future__ import annotations

from typing import Any, Dict, Optional, Sequence

from probelib.sweep import find_plateau, median, significant

STARTUP_POINTS = 4


def describe_bytes(size: float) -> str:
    """8 -> '8 B', 65536 -> '64 KiB', 1073741824 -> '1 GiB', 3145728 -> '3 MiB', 1500 -> '1.46 KiB'."""
    for unit, scale in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if size >= scale:
            value = size / float(scale)
            return "%s %s" % (("%d" % value) if value == int(value) else ("%.3g" % value), unit)
    return "%d B" % size


def knee_of_curve(sizes_bytes: Sequence[int], times_s: Sequence[float], algbw_gbps: Sequence[float],
                  startup_points: int = STARTUP_POINTS, tolerance_pct: float = 5.0, min_points: int = 3,
                  min_size: float = 0.0) -> Dict[str, Any]:
    """{knee_bytes, startup_us, plateau_algbw_gbps, first_size_at_half_plateau_bytes, method}.

    startup = median time of the ``startup_points`` smallest sizes; plateau_algbw = sweep.find_plateau over algbw
    (sizes >= ``min_size``), else the largest algbw measured (the method says so); knee_bytes = startup x
    plateau_algbw; first_size_at_half_plateau_bytes = the first measured size whose algbw >= plateau / 2.
    Raises ValueError when the sweep is too short to separate startup from bandwidth.
    """
    if not len(sizes_bytes) == len(times_s) == len(algbw_gbps):
        raise ValueError("sizes, times and algbw differ in length")
    if len(sizes_bytes) < startup_points + 2:
        raise ValueError("%d measured size(s): the knee needs at least %d (%d for the startup time, 2 more for the bandwidth)"
                         % (len(sizes_bytes), startup_points + 2, startup_points))
    order = sorted(range(len(sizes_bytes)), key=lambda index: sizes_bytes[index])
    sizes = [sizes_bytes[index] for index in order]
    times = [times_s[index] for index in order]
    algbw = [algbw_gbps[index] for index in order]
    startup_s = median(times[:startup_points])
    plateau = find_plateau(sizes, algbw, tolerance_pct=tolerance_pct, min_points=min_points, min_size=min_size)
    if plateau["found"]:
        plateau_gbps = plateau["value"]
        where = "the median algbw of the plateau at %s-%s (%s)" % (
            describe_bytes(plateau["sizes"][0]), describe_bytes(plateau["sizes"][-1]), plateau["reason"])
    else:
        best = max(range(len(algbw)), key=lambda index: algbw[index])
        plateau_gbps = algbw[best]
        where = "the largest algbw measured, at %s, because there is no plateau (%s)" % (
            describe_bytes(sizes[best]), plateau["reason"])
    knee_bytes = startup_s * plateau_gbps * 1e9
    method = ("model t(s) = startup + s / plateau_algbw; startup = median time of the %d smallest sizes (%s-%s); "
              "plateau_algbw = %s; knee = startup x plateau_algbw, the size whose transfer time equals the startup "
              "time, where algbw is half the plateau" % (
                  startup_points, describe_bytes(sizes[0]), describe_bytes(sizes[startup_points - 1]), where))
    return {
        "knee_bytes": significant(knee_bytes),
        "startup_us": significant(startup_s * 1e6),
        "plateau_algbw_gbps": significant(plateau_gbps),
        "first_size_at_half_plateau_bytes": first_size_at_least(sizes, algbw, plateau_gbps / 2.0),
        "method": method,
    }


def first_size_at_least(sizes: Sequence[int], values: Sequence[float], threshold: float) -> Optional[int]:
    for size, value in zip(sizes, values):
        if value >= threshold:
            return int(size)
    return None
