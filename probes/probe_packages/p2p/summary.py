"""Pure summaries of one pair's timings: sweep points, the plateau and the headline, the latency record.

GB/s = bytes copied / time / 1e9, each byte counted once; bidirectional adds the two directions, as nvbandwidth does.
"""
from __future__ import annotations

from typing import Any, Dict, List, Sequence

from probelib.sweep import find_plateau, median, significant

HEADLINE_PLATEAU = "plateau"
HEADLINE_LARGEST = "largest_size_no_plateau"


def gbps(size_bytes: int, seconds_per_copy: float) -> float:
    if not seconds_per_copy > 0:
        raise ValueError("a copy cannot take %r s: the timer returned no positive time" % (seconds_per_copy,))
    return size_bytes / seconds_per_copy / 1e9


def unidirectional_point(size_bytes: int, seconds_per_copy: Sequence[float], verified: bool) -> Dict[str, Any]:
    """One size of the one-way sweep: median over the repeats of the time per copy, and its GB/s."""
    seconds = median(seconds_per_copy)
    return {"size_bytes": int(size_bytes), "gbps": significant(gbps(size_bytes, seconds)),
            "time_per_copy_s": significant(seconds), "verified": bool(verified)}


def bidirectional_point(size_bytes: int, forward_s: Sequence[float], backward_s: Sequence[float],
                        verified: bool) -> Dict[str, Any]:
    """One size of the two-way sweep. Each repeat: src->dst and dst->src each timed on its own source GPU;
    gbps = the median over repeats of their sum; time_per_copy_s = the median of the slower direction's time."""
    if len(forward_s) != len(backward_s) or not forward_s:
        raise ValueError("need one time per repeat for each direction (%d, %d)" % (len(forward_s), len(backward_s)))
    sums = [gbps(size_bytes, forward) + gbps(size_bytes, backward) for forward, backward in zip(forward_s, backward_s)]
    return {"size_bytes": int(size_bytes), "gbps": significant(median(sums)),
            "time_per_copy_s": significant(median([max(pair) for pair in zip(forward_s, backward_s)])),
            "src_to_dst_gbps": significant(gbps(size_bytes, median(forward_s))),
            "dst_to_src_gbps": significant(gbps(size_bytes, median(backward_s))),
            "verified": bool(verified)}


def sweep_section(points: List[Dict[str, Any]], spin_covered_enqueue: bool, tolerance_pct: float,
                  min_points: int) -> Dict[str, Any]:
    """The sweep, its plateau (probelib.sweep.find_plateau over gbps) and the headline: the plateau's value, else the
    largest size's value."""
    if not points:
        raise ValueError("a sweep needs at least one measured size")
    sizes = [point["size_bytes"] for point in points]
    values = [point["gbps"] for point in points]
    found = find_plateau(sizes, values, tolerance_pct, min_points)
    plateau = {"found": bool(found["found"]), "sizes_bytes": [int(size) for size in found["sizes"]],
               "value_gbps": significant(found["value"]) if found["found"] else None, "reason": found["reason"]}
    if found["found"]:
        headline, source = plateau["value_gbps"], HEADLINE_PLATEAU
    else:
        headline, source = values[-1], HEADLINE_LARGEST
    return {"sweep": points, "plateau": plateau, "headline_gbps": headline, "headline_source": source,
            "spin_covered_enqueue": bool(spin_covered_enqueue)}


def latency_section(size_bytes: int, copies: int, seconds_per_copy: Sequence[float], verified: bool,
                    spin_covered_enqueue: bool) -> Dict[str, Any]:
    """GPU time per small copy: each sample is one batch of ``copies`` back-to-back copies (its time / copies);
    median_us is the median of the samples."""
    if copies < 1 or not seconds_per_copy:
        raise ValueError("latency needs at least one copy and one sample")
    if not all(seconds > 0 for seconds in seconds_per_copy):
        raise ValueError("the timer returned no positive time for a latency batch")
    return {"size_bytes": int(size_bytes), "median_us": significant(median(seconds_per_copy) * 1e6),
            "samples": len(seconds_per_copy), "copies_per_sample": int(copies), "verified": bool(verified),
            "spin_covered_enqueue": bool(spin_covered_enqueue)}
