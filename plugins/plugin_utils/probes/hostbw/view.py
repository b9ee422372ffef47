"""hostbw's dossier section: each host-to-device and device-to-host copy, its spread, share of the PCIe link and NUMA
placement."""
from __future__ import annotations

from typing import Any, Dict

from ...probe_kit.kit import Cell, cell, table, device_label, device_records, MISSING, dig, error_words, ProbeSection
from .together_view import together_table


def hostbw_view(data: Any) -> Dict[str, Any]:
    rows = []
    for device in device_records(data):
        label = device_label(device)
        locality = device.get("locality") if isinstance(device.get("locality"), dict) else {}
        if device.get("error") and not device.get("results"):
            rows.append([Cell(label), Cell("failed", error_words(device["error"]), "bad")] + [Cell("—")] * 5)
            continue
        for result in device.get("results") or []:
            rows.append([Cell(label), Cell("%s %s" % (result.get("host_memory", "?"), str(result.get("direction", "?")).upper())),
                         cell("median_gbps", result.get("median_gbps", {"unavailable": error_words(result.get("error")) or "not measured"})),
                         cell("cv_pct", result.get("cv_pct", MISSING)),
                         cell("pct_of_link_raw", result.get("pct_of_link_raw", MISSING)),
                         cell("ok", dig(result, "data_check", "ok"), "bad" if dig(result, "data_check", "ok") is False else ""),
                         Cell(str(locality.get("note") or result.get("note") or "—"))])
    tables = [table("Host to device and back", ["device", "copy", "bandwidth", "CV", "of the PCIe link", "data checked",
                                                "NUMA placement / note"], rows, "nothing was measured")]
    together = together_table(data)  # None for a result from before the together phase
    if together is not None:
        tables.append(together)
    return {"note": str(dig(data, "method", "bandwidth")) if dig(data, "method", "bandwidth") is not MISSING else "", "plots": [],
            "tables": tables}


SECTION = ProbeSection(hostbw_view)
