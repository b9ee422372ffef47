"""The load section's correctness table: per GPU how its products were checked against its reference product, what
differed, and the reference's sha256 (the same on every GPU of one model)."""
from __future__ import annotations

from typing import Any, Dict, List

from ...probe_kit.kit import difference_words, mode_words, format_quantity, Cell, table, is_unavailable


def correctness_table(gpus: List[Dict[str, Any]]) -> Dict[str, Any]:
    rows = []
    for gpu in gpus:
        record = gpu.get("correctness")
        label = Cell("GPU %s" % gpu.get("index"))
        if not isinstance(record, dict):
            continue
        if is_unavailable(record):
            rows.append([label, Cell("n/a", record["unavailable"], "na")] + [Cell("—")] * 4)
            continue
        mismatches = record.get("mismatches") or []
        first = mismatches[0] if mismatches and isinstance(mismatches[0], dict) else None
        differed = Cell("%s of %s checks" % (record.get("mismatching_checks"), record.get("checks_run")), "",
                        "bad" if record.get("mismatching_checks") else "")
        detail = "product %s: %s" % (first.get("product"), difference_words(first)) if first else "none"
        digest = record.get("reference_sha256")
        rows.append([label, Cell(mode_words(record)), differed, Cell(detail, "", "bad" if first else ""),
                     Cell(format_quantity(record.get("check_cost_pct"), "%") if isinstance(record.get("check_cost_pct"), (int, float)) else "—"),
                     Cell(digest[:16] + "…" if isinstance(digest, str) else "—", digest if isinstance(digest, str) else "")])
    return table("Products checked against the reference (computed before the load from the same seeded operands)",
                 ["GPU", "compared", "checks that differed", "first difference", "cost of the checks", "reference sha256"],
                 rows, "this result holds no checks (a load probe from before them)")
