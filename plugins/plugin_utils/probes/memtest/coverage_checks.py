"""memtest.coverage: the workers on each GPU tested at least a stated share of its free memory."""
from __future__ import annotations

from typing import Any, Dict, List

from ...probe_kit.kit import (
    make_check, param_source, reads_params, unavailable_check, Check, format_quantity, device_label, device_records,
    is_unavailable, number_or_none)
from .records import gpu_of


@reads_params("min_tested_pct")
def coverage(host: str, data: Dict[str, Any], rule: Dict[str, Any], context: Any) -> List[Check]:
    floor = float(rule["params"]["min_tested_pct"])
    checks = []
    for entry in device_records(data):
        device = entry.get("device") if isinstance(entry.get("device"), dict) else {}
        label, gpu = device_label(device), gpu_of(device)
        if device.get("kind") != "cuda":
            checks.append(make_check(rule, host, "skip", "%s: the CPU path tests a fixed cpu_mib of host memory, not a share "
                                     "of it" % label))
            continue
        share = entry.get("tested_pct_of_free")
        if is_unavailable(share):
            checks.append(unavailable_check(rule, host, "the share of free memory tested", share, gpu))
            continue
        value = number_or_none(share)
        if value is None:
            checks.append(make_check(rule, host, "error", "%s: the result holds no share of free memory tested" % label, gpu))
            continue
        status = "pass" if value >= floor else "warn"
        words = "%s: %s of %s free tested by %d worker(s)" % (
            label, format_quantity(value, "%"), format_quantity((number_or_none(entry.get("free_memory_bytes")) or 0) / 1e9, "GB"),
            len(entry.get("workers") or []))
        if status == "warn":
            words += "; below %g %%: another process held memory, or memory_pct or safety_margin_mib leave too much out" % floor
        checks.append(make_check(rule, host, status, words, gpu, value=value, unit="%", reference=floor,
                                 reference_source=param_source(rule, "min_tested_pct"), threshold=">= %g %%" % floor))
    return checks
