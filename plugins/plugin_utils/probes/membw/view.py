"""membw's dossier section: the headline per device, the sweep over buffer sizes, and the bandwidth by size plotted."""
from __future__ import annotations

from typing import Any, Dict

from ...probe_kit.kit import (
    Cell, cell, table, device_label, device_records, MISSING, dig, error_words, number_or_none, line_chart,
    ProbeSection)
from .together_view import together_table


def membw_view(data: Any) -> Dict[str, Any]:
    headline_rows, sweep_rows, series, plateau_start = [], [], [], None
    for entry in device_records(data):
        device = entry.get("device") if isinstance(entry.get("device"), dict) else {}
        label = device_label(device)
        headline = entry.get("headline") if isinstance(entry.get("headline"), dict) else {}
        plateau = entry.get("plateau") if isinstance(entry.get("plateau"), dict) else {}
        repeats = entry.get("repeats") if isinstance(entry.get("repeats"), dict) else {}
        if entry.get("error"):
            headline_rows.append([Cell(label), Cell("failed", error_words(entry["error"]), "bad")] + [Cell("—")] * 4)
            continue
        cv = number_or_none(repeats.get("cv_pct"))
        headline_rows.append([
            Cell(label), cell("bandwidth_gbps", headline.get("bandwidth_gbps", MISSING)),
            Cell(str(headline.get("source", "—"))),
            Cell(", ".join(str(size) for size in plateau.get("sizes_mib") or []) + " MiB" if plateau.get("found") else "none",
                 "" if plateau.get("found") else str(plateau.get("reason", "")), "" if plateau.get("found") else "warn"),
            cell("median_gbps", repeats.get("median_gbps", MISSING)),
            cell("cv_pct", repeats.get("cv_pct", MISSING), "warn" if cv is not None and repeats.get("cv_warn") else ""),
        ])
        points = []
        for point in entry.get("sweep") or []:
            bandwidth = number_or_none(point.get("bandwidth_gbps"))
            if bandwidth is not None:
                points.append((float(point.get("size_mib")), bandwidth))
            sweep_rows.append([Cell(label), cell("size_mib", point.get("size_mib", MISSING)),
                               cell("bandwidth_gbps", point.get("bandwidth_gbps", MISSING)),
                               Cell(str(point.get("regime", "—"))),
                               cell("copy_verified", point.get("copy_verified", MISSING),
                                    "bad" if point.get("copy_verified") is False else ""),
                               cell("time_per_copy_s", point.get("time_per_copy_s", MISSING))])
        if points:
            series.append((label, points))
        if plateau.get("found") and plateau.get("sizes_mib"):
            plateau_start = min(plateau["sizes_mib"] + ([plateau_start] if plateau_start is not None else []))
    plots = []
    if series:
        plots.append(line_chart("Device copy bandwidth by buffer size (bytes read + written)", series, "MiB", "GB/s",
                                log_x=True, marker_x=plateau_start, marker_label="plateau" if plateau_start else "",
                                x_name="buffer size", y_name="bandwidth",
                                data_note="The numbers: the tables 'Headline per device' and 'Sweep' below."))
    note = str(dig(data, "method", "bytes_counted")) if dig(data, "method", "bytes_counted") is not MISSING else ""
    tables = [
        table("Headline per device", ["device", "bandwidth", "from", "plateau sizes", "repeats median", "repeats CV"],
              headline_rows, "no device was measured"),
        table("Sweep", ["device", "buffer", "bandwidth", "regime", "copy verified", "time per copy"], sweep_rows,
              "no sweep (quick run or nothing measured)")]
    together = together_table(data)  # None for a result from before the together phase
    if together is not None:
        tables.append(together)
    return {"note": "Bytes counted: %s." % note if note else "", "plots": plots, "tables": tables}


SECTION = ProbeSection(membw_view)
