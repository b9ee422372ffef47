"""Pure summaries of one device's membw results: the plateau record, the repeats record, the headline number."""
from __future__ import annotations

from typing import Any, Dict, List, Optional, Sequence

from probelib.fields import unavailable
from probelib.sweep import CV_NEEDS_TWO, cv_pct, find_plateau, median, significant

CV_DEFINITION = "sample standard deviation (n - 1) of the repeat bandwidths over their mean, in percent"


def plateau_record(sizes_mib: Sequence[float], values_gbps: Sequence[float], plan: Dict[str, Any],
                   min_size_mib: float) -> Dict[str, Any]:
    """find_plateau over the measured points, written as the data's plateau object."""
    record: Dict[str, Any] = {"tolerance_pct": plan["tolerance_pct"], "min_points": plan["min_plateau_points"],
                              "min_size_mib": significant(min_size_mib)}
    if plan["quick"]:
        reason = "quick mode measures one size only, so there is no sweep and no plateau"
        found: Dict[str, Any] = {"found": False, "sizes": [], "value": None, "max_deviation_pct": None,
                                 "includes_largest": False, "reason": reason}
    elif not values_gbps:
        found = {"found": False, "sizes": [], "value": None, "max_deviation_pct": None, "includes_largest": False,
                 "reason": "no size was measured"}
    else:
        found = find_plateau(sizes_mib, values_gbps, plan["tolerance_pct"], plan["min_plateau_points"], min_size_mib)
    record.update({
        "found": found["found"],
        "plateau_gbps": significant(found["value"]) if found["found"] else unavailable(found["reason"]),
        "sizes_mib": list(found["sizes"]),
        "max_deviation_pct": significant(found["max_deviation_pct"]) if found["found"] else unavailable(found["reason"]),
        "includes_largest_size": bool(found["includes_largest"]),
        "reason": found["reason"],
    })
    return record


def repeats_record(size_mib: int, iterations: int, bandwidths_gbps: List[float], times_s: List[float],
                   cv_warn_pct: float) -> Dict[str, Any]:
    cv = cv_pct(bandwidths_gbps)
    return {
        "size_mib": size_mib,
        "iterations": iterations,
        "bandwidths_gbps": [significant(value) for value in bandwidths_gbps],
        "times_per_copy_s": [significant(value) for value in times_s],
        "median_gbps": significant(median(bandwidths_gbps)),
        "cv_pct": significant(cv) if cv is not None else unavailable(CV_NEEDS_TWO),
        "cv_definition": CV_DEFINITION,
        "cv_warn_pct": cv_warn_pct,
        "cv_warn": cv is not None and cv > cv_warn_pct,
    }


def headline(quick: bool, plateau: Dict[str, Any], largest_size_mib: Optional[int], largest_gbps: Optional[float],
             repeats_median_gbps: Optional[float]) -> Dict[str, Any]:
    """The one number to compare with the datasheet, and where it comes from. Never a fake plateau.

    plateau found: its median. Quick mode: the median of the repeats at the largest size. Otherwise (no plateau):
    the largest size's value (the repeats' median where they ran), flagged no_plateau.
    """
    if plateau["found"]:
        return {"bandwidth_gbps": plateau["plateau_gbps"], "source": "plateau", "sizes_mib": plateau["sizes_mib"],
                "no_plateau": False}
    if largest_size_mib is None:
        return {"bandwidth_gbps": unavailable("no size was measured"), "source": "none", "sizes_mib": [],
                "no_plateau": True}
    value = repeats_median_gbps if repeats_median_gbps is not None else largest_gbps
    return {"bandwidth_gbps": significant(value), "source": "quick_largest_size" if quick else "largest_size_no_plateau",
            "sizes_mib": [largest_size_mib], "no_plateau": not quick}
