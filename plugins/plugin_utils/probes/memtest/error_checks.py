"""memtest.errors: every word each worker wrote read back as written; an error names the worker, the pattern and the
byte range in the worker's buffer, with the first expected and found words."""
from __future__ import annotations

from typing import Any, Dict, List

from ...probe_kit.kit import make_check, param_source, reads_params, Check, format_quantity
from .records import gpu_of, labelled_workers

RANGES_SHOWN = 3


def range_words(entry: Dict[str, Any]) -> str:
    """'walking_ones pass 0: bytes 5000000-5000008 (chunk 4194304-8388608), 1 wrong word, first expected 0x.. found 0x..'"""
    first, last = (entry.get("error_bytes") or [None, None])[:2]
    chunk = entry.get("chunk_bytes") or [None, None]
    return "%s pass %s: bytes %s-%s (chunk %s-%s), %s wrong word(s), first expected %s found %s (bits %s)" % (
        entry.get("pattern"), entry.get("pass"), first, last, chunk[0], chunk[1], entry.get("errors"),
        entry.get("first_expected"), entry.get("first_found"), entry.get("first_differing_bits"))


def errors_words(result: Dict[str, Any]) -> str:
    per_pattern = ", ".join("%s %d" % (entry.get("pattern"), entry.get("errors")) for entry in result.get("patterns") or []
                            if isinstance(entry, dict) and entry.get("errors"))
    ranges = [entry for entry in result.get("error_ranges") or [] if isinstance(entry, dict)]
    shown = "; ".join(range_words(entry) for entry in ranges[:RANGES_SHOWN])
    more = len(ranges) - RANGES_SHOWN + int(result.get("error_ranges_left_out") or 0)
    words = "wrong words by pattern: %s; at %s" % (per_pattern, shown) if shown else "wrong words by pattern: %s" % per_pattern
    if more > 0:
        words += " (and %d more error range(s))" % more
    return words


def injected_words(result: Dict[str, Any]) -> str:
    injected = result.get("injected")
    if isinstance(injected, dict) and "offset_bytes" in injected:
        return ("; a test bit flip was injected here (inject_offset_bytes %s, bit %s, %s pass %s): these errors include it"
                % (injected["offset_bytes"], injected.get("bit"), injected.get("pattern"), injected.get("pass")))
    return ""


def tested_words(result: Dict[str, Any]) -> str:
    passes = ", ".join("%s %s" % (entry.get("pattern"), entry.get("passes")) for entry in result.get("patterns") or []
                       if isinstance(entry, dict))
    return "%s tested, passes %s in %s" % (
        format_quantity(result.get("buffer_bytes", 0) / 1e9, "GB"), passes, format_quantity(result.get("test_s"), "s"))


@reads_params("max_errors")
def pattern_errors(host: str, data: Dict[str, Any], rule: Dict[str, Any], context: Any) -> List[Check]:
    limit = int(rule["params"]["max_errors"])
    checks = []
    for device, record, label in labelled_workers(data):
        gpu = gpu_of(device)
        result = record.get("result")
        if record.get("status") != "ok" or not isinstance(result, dict):
            checks.append(make_check(rule, host, "error", "%s tested nothing: %s" % (label, record.get("error") or "no result"), gpu))
            continue
        errors = int(result.get("errors") or 0)
        status = "pass" if errors <= limit else "fail"
        words = "%s: %d wrong word(s), %s" % (label, errors, tested_words(result))
        if errors:
            words += "; " + errors_words(result) + injected_words(result)
        checks.append(make_check(rule, host, status, words, gpu, value=errors, unit="count", reference=limit,
                                 reference_source=param_source(rule, "max_errors"), threshold="<= %d wrong words" % limit))
    return checks
