"""The gemm section's verification table: per device how many cases' products after timing equal the ones before,
and each case that differed."""
from __future__ import annotations

from typing import Any, Dict, List

from ...probe_kit.kit import difference_words, Cell, table, device_label, is_unavailable


def verification_table(devices: List[Dict[str, Any]]) -> Dict[str, Any]:
    rows = []
    for entry in devices:
        label = device_label(entry.get("device") if isinstance(entry.get("device"), dict) else {})
        records = [(result, result["verification"]) for result in entry.get("results") or []
                   if isinstance(result, dict) and isinstance(result.get("verification"), dict)]
        verified = [(result, record) for result, record in records if not is_unavailable(record)]
        if not records:
            continue
        wrong = [(result, record) for result, record in verified if not record.get("equal")]
        tolerant = sum(1 for unused_result, record in verified if record.get("mode") == "tolerance")
        rows.append([Cell(label), Cell("%d of %d" % (len(verified), len(records))),
                     Cell("%d" % tolerant, "compared within the stated tolerance: two products at rest differed" if tolerant else ""),
                     Cell("; ".join("%s %s: %s" % (result.get("name"), result.get("dtype"), difference_words(record))
                                    for result, record in wrong) or "none", "", "bad" if wrong else "")])
    return table("Products verified: after the timed repeats against before, same inputs",
                 ["device", "cases verified", "of them within a tolerance", "cases that differed"], rows,
                 "this result holds no verification (a gemm probe from before it)")
