"""Pure records of one size: each version's traffic, time and bandwidth, the verification, the speed-ups."""
from __future__ import annotations

from typing import Any, Dict, List, Optional

from probe_packages.fusion import compare, traffic
from probelib.fields import unavailable
from probelib.sweep import median, significant


def version_record(version: str, elements: int, element_bytes: int, iterations: int, repeats_s: List[float],
                   membw_gbps: Optional[float], membw_why: str) -> Dict[str, Any]:
    """One version at one size: bytes counted, the median time per iteration of the repeats, bandwidth, % of membw."""
    moved = traffic.traffic_bytes(version, elements, element_bytes)
    seconds = median(repeats_s)
    gbps = compare.achieved_gbps(moved, seconds)
    share = compare.of_membw_pct(gbps, membw_gbps)
    return {
        "traffic_bytes": moved,
        "working_set_bytes": traffic.working_set_bytes(version, elements, element_bytes),
        "iterations": iterations,
        "repeats_s": [significant(value) for value in repeats_s],
        "time_per_iteration_s": significant(seconds),
        "achieved_gbps": significant(gbps),
        "of_membw_pct": significant(share) if share is not None else unavailable(membw_why),
    }


def speedups(unfused: Dict[str, Any], fused: Any, plan: Dict[str, Any], kind: str,
             cache_bytes: Optional[int]) -> Dict[str, Any]:
    """predicted (the traffic ratio) and measured (unfused time / fused time), their gap and the sentence."""
    predicted = traffic.predicted_speedup()
    record: Dict[str, Any] = {"predicted_speedup": significant(predicted)}
    if not isinstance(fused, dict) or "time_per_iteration_s" not in fused:
        why = "the fused version was not measured: %s" % (fused.get("unavailable") if isinstance(fused, dict) else fused)
        record.update({"measured_speedup": unavailable(why), "speedup_gap_pct": unavailable(why),
                       "explanation": "no measured speed-up to set against the predicted %.2fx: %s" % (predicted, why)})
        return record
    measured = unfused["time_per_iteration_s"] / fused["time_per_iteration_s"]

    def share(entry: Dict[str, Any]) -> Optional[float]:
        value = entry["of_membw_pct"]
        return float(value) if isinstance(value, (int, float)) else None

    record.update({
        "measured_speedup": significant(measured),
        "speedup_gap_pct": significant(compare.speedup_gap_pct(predicted, measured)),
        "explanation": compare.explain(predicted, measured, plan["speedup_tolerance_pct"], unfused["achieved_gbps"],
                                       fused["achieved_gbps"], share(unfused), share(fused), plan["bandwidth_bound_pct"],
                                       kind, fused["working_set_bytes"], cache_bytes),
    })
    return record


def verification_record(dtype: str, max_abs_diff: Any, agree: Any) -> Dict[str, Any]:
    rtol, atol = compare.TOLERANCES[dtype]
    return {"max_abs_diff": significant(max_abs_diff) if isinstance(max_abs_diff, float) else max_abs_diff,
            "rtol": rtol, "atol": atol, "outputs_agree": agree}


def unmeasured_point(elements: int, status: str, reason: str, dtype: str) -> Dict[str, Any]:
    words = unavailable("%s: %s" % (status, reason))
    return {"elements": elements, "status": status, "reason": reason, "unfused": words, "fused": words,
            "compile": words, "verification": verification_record(dtype, words, words),
            "predicted_speedup": significant(traffic.predicted_speedup()), "measured_speedup": words,
            "speedup_gap_pct": words, "explanation": "not measured: %s" % reason}
