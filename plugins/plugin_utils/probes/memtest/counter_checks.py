"""memtest.ecc_increase: no memory error counter of a GPU rose while its memory was tested. An uncorrectable ECC error,
a row remapped for one, a remap left pending or failed: fail; corrected errors (and rows remapped for them): warn."""
from __future__ import annotations

from typing import Any, Dict, List

from ...probe_kit.kit import (
    make_check, param_source, reads_params, unavailable_status, Check, device_label, device_records)
from .records import gpu_of

UNCORRECTABLE = ("ecc.volatile_uncorrected_count", "ecc.aggregate_uncorrected_count", "remapped_rows.uncorrectable_count",
                 "remapped_rows.pending", "remapped_rows.failure")
CORRECTABLE = ("ecc.volatile_corrected_count", "ecc.aggregate_corrected_count", "remapped_rows.correctable_count")


def rise_words(entries: List[Dict[str, Any]]) -> str:
    return ", ".join("%s %s -> %s" % (entry.get("counter"), entry.get("before"), entry.get("after")) for entry in entries)


def largest(entries: List[Dict[str, Any]]) -> int:
    return max([int(entry.get("increase") or 0) for entry in entries] or [0])


@reads_params("max_uncorrected_increase", "max_corrected_increase")
def ecc_increase(host: str, data: Dict[str, Any], rule: Dict[str, Any], context: Any) -> List[Check]:
    fail_above = int(rule["params"]["max_uncorrected_increase"])
    warn_above = int(rule["params"]["max_corrected_increase"])
    threshold = "uncorrectable rise <= %d, corrected rise <= %d (warn)" % (fail_above, warn_above)
    checks = []
    for entry in device_records(data):
        device = entry.get("device") if isinstance(entry.get("device"), dict) else {}
        label, gpu = device_label(device), gpu_of(device)
        changes = entry.get("counter_changes") if isinstance(entry.get("counter_changes"), dict) else {}
        if device.get("kind") != "cuda":
            checks.append(make_check(rule, host, "skip", "%s: the CPU path has no ECC or remapped-row counters" % label))
            continue
        compared = changes.get("compared") or []
        unread = changes.get("unread") if isinstance(changes.get("unread"), dict) else {}
        if not compared:
            reason = "; ".join(sorted(set(unread.values()))) or "no counter was read"
            checks.append(make_check(rule, host, unavailable_status(reason), "%s: no memory error counter could be compared "
                                     "before and after the test: %s" % (label, reason), gpu))
            continue
        rose = [item for item in changes.get("rose") or [] if isinstance(item, dict)]
        bad = [item for item in rose if item.get("counter") in UNCORRECTABLE]
        corrected = [item for item in rose if item.get("counter") in CORRECTABLE]
        if largest(bad) > fail_above:
            status, words = "fail", "rose while its memory was tested: %s" % rise_words(bad + corrected)
        elif largest(corrected) > warn_above:
            status, words = "warn", "corrected errors rose while its memory was tested: %s" % rise_words(corrected)
        else:
            status, words = "pass", "no memory error counter rose while its memory was tested (%d compared)" % len(compared)
        if unread:
            words += "; not read: %s" % ", ".join(sorted(unread))
        checks.append(make_check(rule, host, status, "%s: %s" % (label, words), gpu, value=largest(bad + corrected), unit="count",
                                 reference=fail_above, reference_source=param_source(rule, "max_uncorrected_increase"),
                                 threshold=threshold))
    return checks
