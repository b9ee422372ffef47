"""memtest's dossier section: each worker's test (how much, which passes, errors, rate), the error ranges, and each
GPU's memory error counters before and after."""
from __future__ import annotations

from typing import Any, Dict, List

from ...probe_kit.kit import (
    format_quantity, Cell, cell, table, device_label, device_records, MISSING, dig, error_words, ProbeSection)
from .records import labelled_workers


def gigabytes(value: Any) -> Cell:
    return Cell(format_quantity(value / 1e9, "GB")) if isinstance(value, (int, float)) else Cell("—")


def worker_rows(data: Any) -> List[List[Cell]]:
    rows = []
    for unused_device, record, label in labelled_workers(data):
        result = record.get("result") if isinstance(record.get("result"), dict) else None
        if record.get("status") != "ok" or result is None:
            rows.append([Cell(label), Cell("failed", error_words(record.get("error")) or "no result", "bad")] + [Cell("—")] * 5)
            continue
        passes = ", ".join("%s %s" % (entry.get("pattern"), entry.get("passes")) for entry in result.get("patterns") or [])
        errors = result.get("errors")
        rows.append([Cell(label), gigabytes(result.get("buffer_bytes")),
                     cell("tested_pct_of_share", result.get("tested_pct_of_share", MISSING)), Cell(passes),
                     cell("errors", errors, "bad" if errors else ""), cell("gbps", result.get("gbps", MISSING)),
                     cell("test_s", result.get("test_s", MISSING))])
    return rows


def range_rows(data: Any) -> List[List[Cell]]:
    rows = []
    for unused_device, record, label in labelled_workers(data):
        result = record.get("result") if isinstance(record.get("result"), dict) else {}
        for entry in result.get("error_ranges") or []:
            first, last = (entry.get("error_bytes") or [None, None])[:2]
            rows.append([Cell(label), Cell("%s pass %s" % (entry.get("pattern"), entry.get("pass"))),
                         Cell("%s-%s" % (first, last)), cell("errors", entry.get("errors"), "bad"),
                         Cell(str(entry.get("first_expected"))), Cell(str(entry.get("first_found")), "", "bad")])
    return rows


def counter_rows(data: Any) -> List[List[Cell]]:
    rows = []
    for entry in device_records(data):
        device = entry.get("device") if isinstance(entry.get("device"), dict) else {}
        changes = entry.get("counter_changes") if isinstance(entry.get("counter_changes"), dict) else {}
        if device.get("kind") != "cuda":
            continue
        for item in changes.get("rose") or []:
            rows.append([Cell(device_label(device)), Cell(str(item.get("counter"))), Cell(str(item.get("before"))),
                         Cell(str(item.get("after")), "", "bad")])
        unread = changes.get("unread") if isinstance(changes.get("unread"), dict) else {}
        for name in sorted(unread):
            rows.append([Cell(device_label(device)), Cell(name), Cell("n/a", str(unread[name]), "na"), Cell("n/a", "", "na")])
        if not changes.get("rose") and changes.get("compared"):
            rows.append([Cell(device_label(device)), Cell("%d counters" % len(changes["compared"])), Cell("—"), Cell("unchanged")])
    return rows


def memtest_view(data: Any) -> Dict[str, Any]:
    injected = dig(data, "plan", "inject")
    note = ("A test bit flip was injected (plan.inject): the errors it made are expected." if isinstance(injected, dict) else "")
    return {"note": note, "plots": [], "tables": [
        table("Memory tested per worker", ["worker", "tested", "of its free share", "passes", "wrong words", "rate", "time"],
              worker_rows(data), "no worker ran"),
        table("Error ranges (byte offsets in the worker's buffer)", ["worker", "pattern", "bytes", "wrong words",
                                                                     "first expected", "first found"],
              range_rows(data), "no error: every word read back as written"),
        table("ECC and remapped rows, before and after", ["device", "counter", "before", "after"], counter_rows(data),
              "no GPU counters (the CPU path)")]}


SECTION = ProbeSection(memtest_view)
