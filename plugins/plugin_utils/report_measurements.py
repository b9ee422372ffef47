"""Dossier sections of the measurement probes (membw, hostbw, gemm): tables and inline SVG plots."""
from __future__ import annotations

from typing import Any, Dict, List

from .number_format import format_number
from .report_cells import Cell, cell, table
from .result_fields import MISSING, dig, error_words, is_unavailable, number_or_none
from .svg_plots import line_chart, roofline_chart


def _devices(data: Any) -> List[Dict[str, Any]]:
    devices = dig(data, "devices")
    return [device for device in devices if isinstance(device, dict)] if isinstance(devices, list) else []


def _label(device: Dict[str, Any]) -> str:
    if device.get("kind") == "cpu":
        return "CPU"
    uuid = device.get("uuid")
    return "GPU %s%s" % (device.get("index"), " (%s)" % uuid[:12] if isinstance(uuid, str) else "")


def membw_view(data: Any) -> Dict[str, Any]:
    headline_rows, sweep_rows, series, plateau_start = [], [], [], None
    for entry in _devices(data):
        device = entry.get("device") if isinstance(entry.get("device"), dict) else {}
        label = _label(device)
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
    return {"note": "Bytes counted: %s." % note if note else "", "plots": plots, "tables": [
        table("Headline per device", ["device", "bandwidth", "from", "plateau sizes", "repeats median", "repeats CV"],
              headline_rows, "no device was measured"),
        table("Sweep", ["device", "buffer", "bandwidth", "regime", "copy verified", "time per copy"], sweep_rows,
              "no sweep (quick run or nothing measured)")]}


def hostbw_view(data: Any) -> Dict[str, Any]:
    rows = []
    for device in _devices(data):
        label = _label(device)
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
    return {"note": str(dig(data, "method", "bandwidth")) if dig(data, "method", "bandwidth") is not MISSING else "", "plots": [],
            "tables": [table("Host to device and back", ["device", "copy", "bandwidth", "CV", "of the PCIe link", "data checked",
                                                         "NUMA placement / note"], rows, "nothing was measured")]}


def _gemm_model_note(data: Any) -> str:
    """Which model the production shapes came from (the model_config parameter), or nothing without one."""
    model = dig(data, "plan", "model")
    if not isinstance(model, dict):
        return ""
    fields = model.get("fields") if isinstance(model.get("fields"), dict) else {}
    assumptions = [str(entry) for entry in model.get("assumptions") or [] if isinstance(entry, str)]
    return "Production shapes from the model %s (model_config %s, sha256 %s; %s)%s." % (
        model.get("name", "?"), model.get("file", "?"), model.get("sha256", "?"),
        ", ".join("%s %s" % item for item in sorted(fields.items())) or "no fields recorded",
        "; assumed: " + "; ".join(assumptions) if assumptions else "")


def gemm_view(data: Any) -> Dict[str, Any]:
    rows, best_rows, points, roofs = [], [], [], []
    devices = _devices(data)
    for entry in devices:
        device = entry.get("device") if isinstance(entry.get("device"), dict) else {}
        label = _label(device)
        rates = entry.get("dtypes") if isinstance(entry.get("dtypes"), dict) else {}
        for dtype, rate in sorted(rates.items()):
            if is_unavailable(rate):
                best_rows.append([Cell(label), Cell(dtype), cell("rate_tflops", rate), Cell("—"), Cell("—")])
                continue
            best = rate.get("best") if isinstance(rate.get("best"), dict) else {}
            roof = rate.get("roof_after_timing") if isinstance(rate.get("roof_after_timing"), dict) else {}
            best_rows.append([Cell(label), Cell(dtype), cell("rate_tflops", best.get("tflops", MISSING)), Cell(str(best.get("case", "—"))),
                              Cell("%s (%s)" % (format_number(roof.get("peak_tflops", "?")), roof.get("peak_source", "?")))])
            if entry is devices[0] and number_or_none(roof.get("peak_tflops")) and number_or_none(roof.get("bandwidth_gbps")):
                roofs.append((dtype, float(roof["peak_tflops"]), float(roof["bandwidth_gbps"])))
        for result in entry.get("results") or []:
            before = result.get("classified_before_timing") if isinstance(result.get("classified_before_timing"), dict) else {}
            after = result.get("explained_after_timing") if isinstance(result.get("explained_after_timing"), dict) else {}
            measurement = result.get("measurement")
            tflops = measurement if is_unavailable(measurement) else dig(measurement, "tflops")
            rows.append([Cell(label), Cell(str(result.get("dtype"))), Cell(str(result.get("name"))),
                         cell("arithmetic_intensity_flop_per_byte", result.get("arithmetic_intensity_flop_per_byte", MISSING)),
                         Cell(str(before.get("classification", "—"))), cell("rate_tflops", tflops),
                         cell("fraction_of_bound_pct", after.get("fraction_of_bound_pct", MISSING),
                              "warn" if after.get("far_below_bound") else ""),
                         Cell(str(after.get("explanation", "—")))])
            if entry is devices[0] and number_or_none(tflops) is not None and number_or_none(result.get("arithmetic_intensity_flop_per_byte")):
                points.append((str(result.get("dtype")), str(result.get("name")), float(result["arithmetic_intensity_flop_per_byte"]),
                               float(tflops)))
    plots = [roofline_chart("Roofline of %s: every measured shape, roofs from the measured bandwidth and the dtype's peak"
                            % _label((devices[0].get("device") or {})), roofs, points,
                            data_note="Each shape's numbers: the table 'Every shape: classified before it ran, explained "
                                      "after' below; the roofs: 'Best rate per dtype'.")] if points else []
    conventions = dig(data, "conventions")
    notes = [_gemm_model_note(data)] + ([str(value) for value in conventions.values()] if isinstance(conventions, dict) else [])
    return {"note": " ".join(note for note in notes if note), "plots": plots,
            "tables": [table("Best rate per dtype", ["device", "dtype", "best", "shape", "compute roof (source)"], best_rows,
                             "nothing was measured"),
                       table("Every shape: classified before it ran, explained after", ["device", "dtype", "shape", "FLOP/byte",
                             "classified before timing", "rate", "of its bound", "explanation"], rows, "no shape was measured")]}
