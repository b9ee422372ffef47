"""Rankings of one tensor's formats and the sentences that explain them, from the numbers alone (plain Python).

An exact format ranks as +inf dB, an overflowed (infinite-error) one as -inf. A reversal is a format with fewer bits
per element that reaches a higher SQNR than one with more. Nothing here says anything about model quality.
"""
from __future__ import annotations

import math
from typing import Any, Dict, List, Optional, Sequence

from probelib.fields import number_or_none

OUTLIER_GAP_DB = 3.0
SPREAD_RATIO = 2.0


def rank_value(entry: Dict[str, Any]) -> float:
    if entry.get("exact"):
        return math.inf
    if entry.get("sqnr_db") is None:
        return -math.inf
    return float(entry["sqnr_db"])


def ranking_by_bits(formats: Sequence[Dict[str, Any]]) -> List[str]:
    """Widest storage first (bits per element with the scales' cost); ties keep the formats' order."""
    order = sorted(range(len(formats)), key=lambda index: (-formats[index]["effective_bits_per_element"], index))
    return [formats[index]["format"] for index in order]


def ranking_by_sqnr(formats: Sequence[Dict[str, Any]]) -> List[str]:
    """Smallest error first (highest SQNR; exact first, infinite error last); ties keep the formats' order."""
    order = sorted(range(len(formats)), key=lambda index: (-rank_value(formats[index]), index))
    return [formats[index]["format"] for index in order]


def _margin(better: float, worse: float) -> Optional[float]:
    return better - worse if math.isfinite(better) and math.isfinite(worse) else None


def reversals(formats: Sequence[Dict[str, Any]]) -> List[Dict[str, Any]]:
    """Every pair where the format with fewer bits per element has the higher SQNR; the widest margin first (an infinite
    one first of all, then the better of the narrower formats)."""
    found = []
    for fewer in formats:
        for more in formats:
            if fewer["bits_per_element"] < more["bits_per_element"] and rank_value(fewer) > rank_value(more):
                found.append({"fewer_bits": fewer["format"], "fewer_bits_per_element": fewer["bits_per_element"],
                              "fewer_bits_sqnr_db": fewer["sqnr_db"], "more_bits": more["format"],
                              "more_bits_per_element": more["bits_per_element"], "more_bits_sqnr_db": more["sqnr_db"],
                              "margin_db": _margin(rank_value(fewer), rank_value(more))})
    by_name = {entry["format"]: entry for entry in formats}
    return sorted(found, key=lambda item: (-(item["margin_db"] if item["margin_db"] is not None else math.inf),
                                           -rank_value(by_name[item["fewer_bits"]])))


def db(entry: Dict[str, Any]) -> str:
    if entry.get("exact"):
        return "exact (infinite SQNR)"
    if entry.get("sqnr_db") is None:
        return "an infinite error"
    return "%.1f dB" % entry["sqnr_db"]


def _spread_ratio(stats: Dict[str, Any]) -> Optional[float]:
    spread = stats.get("channel_absmax")
    ratio = spread.get("max_over_median") if isinstance(spread, dict) else None
    return number_or_none(ratio)


def _reversal_cause(fewer: Dict[str, Any], more: Dict[str, Any], stats: Dict[str, Any]) -> str:
    if more.get("outcome") == "infinite":
        return "%s overflows %d element(s) to inf" % (more["label"], more["overflow_count"])
    ratio = _spread_ratio(stats)
    if fewer["granularity"] == "channel" and more["format"].startswith("int") and more["granularity"] == "tensor" and ratio is not None:
        return ("a scale per row follows each row's range, and the row absmaxima span %.1f x (max / median), which one "
                "tensor-wide scale cannot" % ratio)
    if more["format"].startswith("fp8"):
        return ("%s spends its bits on exponent range (%d mantissa bits) that a scaled tensor does not need, while the "
                "integer grid spends them all on uniform steps" % (more["label"], 2 if more["format"] == "fp8_e5m2" else 3))
    return "the narrower format's scaling fits this tensor's distribution better"


def reversal_sentence(found: List[Dict[str, Any]], by_name: Dict[str, Dict[str, Any]], stats: Dict[str, Any]) -> str:
    top = found[0]
    fewer, more = by_name[top["fewer_bits"]], by_name[top["more_bits"]]
    others = len(found) - 1
    return ("Reversal: %s (%d bits) reaches %s, above %s (%d bits) at %s, because %s%s." % (
        fewer["label"], fewer["bits_per_element"], db(fewer), more["label"], more["bits_per_element"], db(more),
        _reversal_cause(fewer, more, stats),
        "" if not others else "; %d more pair(s) with fewer bits and a higher SQNR" % others))


def outlier_sentence(by_name: Dict[str, Dict[str, Any]], stats: Dict[str, Any], width: str) -> Optional[str]:
    tensor, channel = by_name.get(width + "_per_tensor"), by_name.get(width + "_per_channel")
    if tensor is None or channel is None:
        return None
    gap = _margin(rank_value(channel), rank_value(tensor))
    ratio = _spread_ratio(stats)
    if gap is None or ratio is None:
        return None
    kurtosis = stats.get("kurtosis_pearson")
    shape = "" if not isinstance(kurtosis, (int, float)) else " (kurtosis %.1f, a Gaussian's is 3; %.3g %% of elements beyond 6 std)" % (
        kurtosis, 100.0 * stats.get("outlier_fraction", 0.0))
    if gap >= OUTLIER_GAP_DB and ratio >= SPREAD_RATIO:
        return ("Outlier effect: %s per-tensor is %.1f dB below per-channel (%s against %s): the largest row absmax is %.1f x "
                "the median row's%s, so one tensor-wide step (absmax / %d) is coarse for the typical row." % (
                    width, gap, db(tensor), db(channel), ratio, shape, 127 if width == "int8" else 7))
    return ("Per-channel scaling gains %.1f dB over per-tensor for %s: the row absmaxima lie within %.1f x of the median row's%s."
            % (gap, width, ratio, shape))


def fp16_sentence(by_name: Dict[str, Dict[str, Any]], fp16_range: Dict[str, Any]) -> Optional[str]:
    fp16, bf16 = by_name.get("fp16"), by_name.get("bf16")
    if fp16 is None or bf16 is None:
        return None
    above, below = fp16_range.get("above_max_count", 0), fp16_range.get("below_smallest_subnormal_count", 0)
    flushed = fp16.get("flushed_to_zero_count", 0)
    out_of_range = []
    if above:
        out_of_range.append("%d element(s) above fp16's largest value 65504 (inf in fp16)" % above)
    if below or flushed:
        out_of_range.append("%d nonzero element(s) below fp16's smallest subnormal 5.96e-08, %d flushed to zero in fp16"
                            % (below, flushed))
    if rank_value(bf16) > rank_value(fp16):
        return ("Range reversal: bf16 (%s) beats fp16 (%s) at the same 16 bits because of %s; bf16's 8-bit exponent keeps "
                "them." % (db(bf16), db(fp16), "; ".join(out_of_range) or "fp16's narrower exponent range"))
    margin = _margin(rank_value(fp16), rank_value(bf16))
    gain = "by %.1f dB" % margin if margin is not None else "(%s against %s)" % (db(fp16), db(bf16))
    tail = ("; %s, too few to outweigh fp16's precision" % "; ".join(out_of_range)) if out_of_range else (
        ": no element lies outside fp16's range, so its 10 mantissa bits beat bf16's 7")
    return "fp16 beats bf16 %s at the same 16 bits%s." % (gain, tail)


def fp8_sentence(by_name: Dict[str, Dict[str, Any]]) -> Optional[str]:
    e4m3, e5m2 = by_name.get("fp8_e4m3"), by_name.get("fp8_e5m2")
    if e4m3 is None or e5m2 is None:
        return None
    margin = _margin(rank_value(e4m3), rank_value(e5m2))
    if rank_value(e4m3) >= rank_value(e5m2):
        return ("fp8 e4m3 beats e5m2 by %s: with a per-tensor scale the largest element maps onto each format's largest "
                "value, so e4m3's third mantissa bit counts more than e5m2's wider exponent (%d against %d elements flushed "
                "to zero)." % ("%.1f dB" % margin if margin is not None else "an unbounded margin",
                               e4m3["flushed_to_zero_count"], e5m2["flushed_to_zero_count"]))
    margin = _margin(rank_value(e5m2), rank_value(e4m3))
    return ("fp8 e5m2 beats e4m3 by %s: the tensor's dynamic range exceeds e4m3's, which flushes %d nonzero element(s) to "
            "zero against e5m2's %d." % ("%.1f dB" % margin if margin is not None else "an unbounded margin",
                                         e4m3["flushed_to_zero_count"], e5m2["flushed_to_zero_count"]))


def width_sentence(formats: Sequence[Dict[str, Any]], bits: int) -> Optional[str]:
    same = [entry for entry in formats if entry["bits_per_element"] == bits]
    if len(same) < 3:
        return None
    best = max(same, key=rank_value)
    worst = min(same, key=rank_value)
    return "Among the %d-bit formats %s leads at %s and %s trails at %s." % (bits, best["label"], db(best), worst["label"], db(worst))


def scaling_reversal_sentence(by_name: Dict[str, Dict[str, Any]], stats: Dict[str, Any]) -> Optional[str]:
    """At the same 8 bits: fp8 beats int8 with one scale per tensor, int8 beats that fp8 with one scale per row."""
    tensor, channel = by_name.get("int8_per_tensor"), by_name.get("int8_per_channel")
    if tensor is None or channel is None:
        return None
    for name in ("fp8_e4m3", "fp8_e5m2"):
        fp8 = by_name.get(name)
        if fp8 is None or not rank_value(tensor) < rank_value(fp8) < rank_value(channel):
            continue
        ratio = _spread_ratio(stats)
        return ("Scaling reversal at 8 bits: with one scale per tensor %s (%s) beats int8 (%s), since its exponent spaces "
                "levels finely near zero where a uniform grid sized to the absmax is coarse; with one scale per row int8 "
                "(%s) beats %s by %.1f dB%s." % (
                    fp8["label"], db(fp8), db(tensor), db(channel), fp8["label"], rank_value(channel) - rank_value(fp8),
                    "" if ratio is None else ", the rows' absmaxima spanning %.1f x (max / median)" % ratio))
    return None


def findings(formats: Sequence[Dict[str, Any]], stats: Dict[str, Any], fp16_range: Dict[str, Any]) -> List[Dict[str, str]]:
    """[{kind, text}]: reversal, scaling reversal, outlier (int8, int4), range (fp16 vs bf16), fp8, same width (8 bits),
    and no_reversal last when no format with fewer bits beats one with more."""
    by_name = {entry["format"]: entry for entry in formats}
    found = reversals(formats)
    result = []
    if found:
        result.append({"kind": "reversal", "text": reversal_sentence(found, by_name, stats)})
    scaling = scaling_reversal_sentence(by_name, stats)
    if scaling:
        result.append({"kind": "scaling_reversal", "text": scaling})
    for width in ("int8", "int4"):
        text = outlier_sentence(by_name, stats, width)
        if text:
            result.append({"kind": "outlier", "text": text})
    for kind, text in (("range", fp16_sentence(by_name, fp16_range)), ("fp8", fp8_sentence(by_name)),
                       ("same_width", width_sentence(formats, 8))):
        if text:
            result.append({"kind": kind, "text": text})
    if not found:
        result.append({"kind": "no_reversal",
                       "text": "No format with fewer bits per element reaches a higher SQNR than one with more here."})
    return result


def explanation(items: Sequence[Dict[str, str]]) -> str:
    return " ".join(item["text"] for item in items)
