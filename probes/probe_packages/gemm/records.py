"""The records the probe writes, built from numbers (no torch), so GPU-shaped data can be built in tests too."""
from __future__ import annotations

import statistics
from typing import Any, Dict, List, Optional, Sequence

from probe_packages.gemm import roofline
from probe_packages.gemm.cases import GemmCase
from probe_packages.gemm.dtypes import DtypeSpec
from probe_packages.gemm.explain import FAR_BELOW_PCT, explain
from probelib import sweep
from probelib.fields import is_unavailable, unavailable
from probelib.measure.bit_compare import TOLERANCE_ULPS


def significant(value: float, digits: int = 5) -> float:
    """``value`` rounded to ``digits`` significant digits (CPU rates are thousandths of a TFLOP/s, GPU ones hundreds)."""
    return float(sweep.significant(value, digits))


CONVENTIONS = {
    "flop": "2 * M * N * K per matmul C (M x N) = A (M x K) @ B (K x N)",
    "tflops": "1e12 FLOP/s, from the median time per iteration of the repeats",
    "bytes_moved": "minimum traffic: (M*K + K*N) * input element bytes + M*N * output element bytes; fp8_e4m3 inputs are "
                   "1 byte each and their bf16 output 2 bytes; other dtypes read and write their own size",
    "gbps": "1e9 bytes/s",
    "ridge": "peak_tflops * 1e12 / (bandwidth_gbps * 1e9) FLOP/byte; intensity below the ridge = memory-bound",
    "attainable": "min(peak_tflops, arithmetic intensity * bandwidth_gbps / 1000) TFLOP/s",
    "classification": "made from the shape and the roofline before the shape is timed (classified_before_timing); "
                      "explained_after_timing repeats it with the final compute roof",
    "timing": "warm-up, then back-to-back calls between CUDA events (perf_counter on the CPU); repeats independent timings",
    "data": "random operands (randn; B scaled by 1/sqrt(K), fp8 by a per-tensor scale), never zeros",
    "verification": "the product computed before timing compared bit for bit with the product after the timed repeats, "
                    "same inputs; where they differ two more are computed at rest, and if those differ too the library is "
                    "not deterministic here and the pair is compared within %d units of the output dtype's precision "
                    "at the product's largest magnitude (mode tolerance)" % TOLERANCE_ULPS,
}


def roof(peak_tflops: Optional[float], peak_source: str, bandwidth_gbps: Optional[float]) -> Any:
    """The roof a classification uses, or unavailable when the peak or the bandwidth is unknown."""
    if peak_tflops is None:
        return unavailable("no compute roof: %s" % peak_source)
    if bandwidth_gbps is None:
        return unavailable("no memory bandwidth for the ridge")
    return {"peak_tflops": significant(peak_tflops), "peak_source": peak_source, "bandwidth_gbps": significant(bandwidth_gbps),
            "ridge_flop_per_byte": significant(roofline.ridge_flop_per_byte(peak_tflops, bandwidth_gbps))}


def case_before_timing(case: GemmCase, spec: DtypeSpec, before_roof: Any) -> Dict[str, Any]:
    """The case as written before it runs: its work, its traffic, its intensity and its classification."""
    intensity = roofline.arithmetic_intensity(case.m, case.n, case.k, spec.input_bytes, spec.output_bytes)
    record = {
        "name": case.name, "group": case.group, "dtype": spec.name, "m": case.m, "n": case.n, "k": case.k,
        "flop": roofline.flop(case.m, case.n, case.k),
        "bytes_moved": roofline.bytes_moved(case.m, case.n, case.k, spec.input_bytes, spec.output_bytes),
        "arithmetic_intensity_flop_per_byte": significant(intensity),
    }
    if is_unavailable(before_roof):
        record["classified_before_timing"] = before_roof
    else:
        classified = dict(before_roof)
        classified["classification"] = roofline.classify(intensity, before_roof["ridge_flop_per_byte"])
        record["classified_before_timing"] = classified
    record["measurement"] = unavailable("not timed yet")
    record["explained_after_timing"] = unavailable("not timed yet")
    record["gpu_state_after_timing"] = unavailable("not timed yet")
    record["timed_state"] = unavailable("not timed yet")
    record["verification"] = unavailable("not timed yet")
    return record


def measurement(m: int, n: int, k: int, timings_s: Sequence[float], iterations: int, warmup_iterations: int,
                check: Dict[str, bool]) -> Dict[str, Any]:
    median_s = statistics.median(timings_s)
    return {
        "tflops": significant(roofline.tflops_of(m, n, k, median_s)),
        "repeats_tflops": [significant(roofline.tflops_of(m, n, k, seconds)) for seconds in timings_s],
        "time_per_iteration_us": significant(median_s * 1e6),
        "repeats_time_per_iteration_us": [significant(seconds * 1e6) for seconds in timings_s],
        "iterations": iterations,
        "warmup_iterations": warmup_iterations,
        "repeats": len(timings_s),
        "output_finite": check["output_finite"],
        "output_nonzero": check["output_nonzero"],
    }


def timed_state(state: Any) -> Any:
    """Which state a shape was timed in, read from the NVML snapshot taken as its timing ended."""
    if not isinstance(state, dict) or is_unavailable(state):
        return unavailable("no GPU state was read after the timing: %s" % (
            state["unavailable"] if is_unavailable(state) else "not a GPU"))
    facts = _clock_facts(state)
    clock = facts["sm_clock_mhz"]
    at = " (SM clock %d MHz)" % clock if clock is not None else ""
    if "sw_power_cap" in facts["clock_event_names"]:
        return {"state": "power_capped", "sm_clock_mhz": clock,
                "sentence": "timed at the software power cap, as in the sustained state%s" % at}
    return {"state": "below_power_cap", "sm_clock_mhz": clock,
            "sentence": "timed below the power cap (no sw_power_cap as the timing ended)%s" % at}


def best_of(records: List[Dict[str, Any]], dtype: str) -> Optional[Dict[str, Any]]:
    timed = [record for record in records if record["dtype"] == dtype and not is_unavailable(record["measurement"])]
    if not timed:
        return None
    best = max(timed, key=lambda record: record["measurement"]["tflops"])
    return {"case": best["name"], "tflops": best["measurement"]["tflops"]}


def _clock_facts(state: Any) -> Dict[str, Any]:
    if not isinstance(state, dict) or is_unavailable(state):
        return {"clock_event_names": (), "sm_clock_mhz": None}
    reasons = state.get("clock_event_reasons")
    names = reasons.get("names", ()) if isinstance(reasons, dict) and not is_unavailable(reasons) else ()
    clock = state.get("sm_clock_mhz")
    return {"clock_event_names": tuple(names), "sm_clock_mhz": clock if isinstance(clock, int) else None}


def explained_after_timing(record: Dict[str, Any], spec: DtypeSpec, after_roof: Any, kind: str,
                           sm_count: Optional[int], l2_cache_bytes: Optional[int]) -> Any:
    """The bound the shape could reach, how much of it it reached, and why (from the numbers)."""
    measured = record["measurement"]
    if is_unavailable(measured):
        return unavailable("not measured: %s" % measured["unavailable"])
    if is_unavailable(after_roof):
        return after_roof
    intensity = record["arithmetic_intensity_flop_per_byte"]
    peak, bandwidth = after_roof["peak_tflops"], after_roof["bandwidth_gbps"]
    classification = roofline.classify(intensity, after_roof["ridge_flop_per_byte"])
    attainable = roofline.attainable_tflops(intensity, peak, bandwidth)
    tflops = measured["tflops"]
    seconds = measured["time_per_iteration_us"] / 1e6
    before = record["classified_before_timing"]
    fraction = roofline.percent(tflops, attainable)
    return {
        "classification": classification,
        "classification_changed": (not is_unavailable(before)) and before["classification"] != classification,
        "peak_tflops": peak, "peak_source": after_roof["peak_source"],
        "bandwidth_gbps": bandwidth, "ridge_flop_per_byte": after_roof["ridge_flop_per_byte"],
        "attainable_tflops": significant(attainable),
        "fraction_of_bound_pct": round(fraction, 1),
        "fraction_of_peak_pct": round(roofline.percent(tflops, peak), 1),
        "achieved_bandwidth_gbps": significant(record["bytes_moved"] / seconds / 1e9),
        "far_below_bound": classification == roofline.COMPUTE_BOUND and fraction < FAR_BELOW_PCT,
        "explanation": explain(
            kind=kind, classification=classification, m=record["m"], n=record["n"], k=record["k"], dtype=spec.name,
            alignment_elements=spec.alignment_elements, input_bytes=spec.input_bytes, tflops=tflops,
            attainable_tflops=attainable, bandwidth_gbps=bandwidth, bytes_moved=record["bytes_moved"],
            time_per_iteration_s=seconds, sm_count=sm_count, l2_cache_bytes=l2_cache_bytes,
            **_clock_facts(record.get("gpu_state_after_timing"))),
    }
