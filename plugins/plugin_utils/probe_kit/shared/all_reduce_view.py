"""The all-reduce's dossier view, the curves with their knees and the ring predicted before it was measured: collective's
section, and collective_hosts' (the same result layout, across hosts)."""
from __future__ import annotations

from typing import Any, Dict, List

from ...report.cells import Cell, cell, table
from ...result_fields import MISSING, dig, is_unavailable, number_or_none
from ...report.svg_plots import bar_chart, line_chart, line_points


def _curves(data: Any) -> List[Dict[str, Any]]:
    curves = dig(data, "curves")
    return [curve for curve in curves if isinstance(curve, dict)] if isinstance(curves, list) else []


def _knee_cell(curve: Dict[str, Any]) -> Cell:
    knee = curve.get("knee")
    if is_unavailable(knee):
        return cell("knee_bytes", knee)
    if not isinstance(knee, dict):
        return Cell("—", "not reported")
    return Cell(cell("knee_bytes", knee.get("knee_bytes", MISSING)).text, str(knee.get("method", "")))


def _ring_comparison_by_size(data: Any) -> Dict[Any, Dict[str, Any]]:
    found = dig(data, "ring_comparison")
    return {entry.get("world_size"): entry for entry in found if isinstance(entry, dict)} if isinstance(found, list) else {}


def _ring_measured_cells(entry: Dict[str, Any]) -> List[Cell]:
    """Measured time and busbw at the plateau, or why the world size was not measured; then the differences."""
    measured = entry.get("measured", MISSING)
    if not isinstance(measured, dict) or is_unavailable(measured):
        return [cell("time_us", measured), cell("busbw_gbps", measured), Cell("—"), Cell("—")]
    return [cell("time_us", measured.get("time_us", MISSING)), cell("busbw_gbps", measured.get("busbw_gbps", MISSING)),
            cell("time_diff_pct", entry.get("time_diff_pct", MISSING)), cell("busbw_diff_pct", entry.get("busbw_diff_pct", MISSING))]


def _ring_rows(data: Any) -> List[List[Cell]]:
    """One row per predicted world size: traffic, predicted and measured time and busbw, the gap and its sentence."""
    worlds = dig(data, "prediction", "world_sizes")
    compared = _ring_comparison_by_size(data)
    rows = []
    for world in worlds if isinstance(worlds, list) else []:
        if not isinstance(world, dict):
            continue
        entry = compared.get(world.get("world_size"), {"measured": world.get("measurable", MISSING)})
        if entry.get("measured") is True:
            entry = {"measured": MISSING}
        rows.append([cell("world_size", world.get("world_size", MISSING)), cell("per_rank_bytes", world.get("per_rank_bytes", MISSING)),
                     cell("traffic_ratio_to_2", world.get("traffic_ratio_to_2", MISSING)),
                     cell("link_rate_gbps", world.get("link_rate_gbps", MISSING)),
                     cell("predicted_time_us", world.get("predicted_time_us", MISSING)),
                     cell("predicted_busbw_gbps", world.get("predicted_busbw_gbps", MISSING))]
                    + _ring_measured_cells(entry) + [Cell(str(entry.get("sentence", "—")))])
    return rows


def _ring_plot(data: Any) -> List[str]:
    """Measured busbw per world size with the predicted busbw ticked on its bar, where both exist somewhere."""
    worlds = dig(data, "prediction", "world_sizes")
    compared = _ring_comparison_by_size(data)
    labels, values, markers = [], [], []
    for world in worlds if isinstance(worlds, list) else []:
        if not isinstance(world, dict):
            continue
        measured = compared.get(world.get("world_size"), {}).get("measured")
        labels.append("%s ranks" % world.get("world_size"))
        values.append(number_or_none(measured.get("busbw_gbps")) if isinstance(measured, dict) else None)
        markers.append([("predicted", number_or_none(world.get("predicted_busbw_gbps")))])
    if not any(value is not None for value in values) or not any(mark[0][1] is not None for mark in markers):
        return []
    return [bar_chart("Ring all-reduce busbw at the plateau: measured, predicted ticked", labels, values, "GB/s",
                      markers=markers, value_name="bus bandwidth",
                      data_note="The numbers: the table 'The ring, predicted before it was measured' below.")]


def _ring_tables(data: Any) -> List[Dict[str, Any]]:
    if not isinstance(dig(data, "prediction"), dict):
        return []  # recorded before the probe predicted the ring
    stated = dig(data, "prediction", "stated")
    return [table("The ring, predicted before it was measured (%s; largest message)" % (stated if isinstance(stated, str) else "?"),
                  ["ranks", "bytes sent per rank", "traffic vs 2 ranks", "ring link rate", "predicted time",
                   "predicted busbw", "measured time", "measured busbw", "time difference", "busbw difference",
                   "what the gap means"], _ring_rows(data), "no world size was predicted")]


def collective_view(data: Any) -> Dict[str, Any]:
    curve_rows, sweep_rows, series, markers = [], [], [], []
    for curve in _curves(data):
        name = str(curve.get("name", "?"))
        if curve.get("error"):
            curve_rows.append([Cell(name), Cell("failed", str(curve["error"]), "bad")] + [Cell("—")] * 5)
            continue
        transports = curve.get("transports")
        knee = curve.get("knee") if isinstance(curve.get("knee"), dict) else {}
        curve_rows.append([Cell(name), cell("peak_busbw_gbps", curve.get("peak_busbw_gbps", MISSING)),
                           cell("busbw_at_largest_gbps", curve.get("busbw_at_largest_gbps", MISSING)),
                           cell("largest_bytes", curve.get("largest_bytes", MISSING)),
                           _knee_cell(curve), cell("startup_us", knee.get("startup_us", MISSING)),
                           cell("transports", transports if transports is not None else MISSING)])
        sweep = [point for point in curve.get("sweep") or [] if isinstance(point, dict)]
        for point in sweep:
            sweep_rows.append([Cell(name), cell("size_bytes", point.get("size_bytes", MISSING)),
                               cell("time_us", point.get("time_us", MISSING)), cell("algbw_gbps", point.get("algbw_gbps", MISSING)),
                               cell("busbw_gbps", point.get("busbw_gbps", MISSING)), cell("iterations", point.get("iterations", MISSING)),
                               cell("verified", point.get("verified", MISSING), "bad" if point.get("verified") is False else "")])
        points = line_points(sweep, "size_bytes", "busbw_gbps")
        if points:
            series.append((name, points))
            knee_bytes = number_or_none(knee.get("knee_bytes"))
            if knee_bytes:
                markers.append((knee_bytes, "knee %s" % name, name))
    plots = [line_chart("All-reduce busbw by message size (knees dashed)", series, "B", "GB/s",
                        log_x=True, markers=markers, width=640, x_name="message size per rank", y_name="bus bandwidth",
                        data_note="The numbers: the tables 'Curves' and 'Sweep' below.")] if series else []
    plots += _ring_plot(data)
    environment_rows = [[Cell("NCCL version"), cell("nccl_version", dig(data, "software", "nccl_version"))],
                        [Cell("backend"), cell("backend", dig(data, "software", "backend"))]]
    variables = dig(data, "environment_nccl")
    for key, value in sorted(variables.items()) if isinstance(variables, dict) else []:
        environment_rows.append([Cell(str(key)), Cell(str(value))])
    hosts = dig(data, "hosts")
    if isinstance(hosts, dict):
        for key in ("node_rank", "nnodes", "master_addr", "master_port", "interface", "ranks_per_host"):
            environment_rows.append([Cell(key), cell(key, hosts.get(key, MISSING))])
    explanation = dig(data, "explanation")
    notes = []
    if isinstance(explanation, str):
        notes.append(explanation)
    elif is_unavailable(explanation):
        notes.append("No explanation of the two curves: %s" % explanation.get("unavailable"))
    plan_note = dig(data, "plan", "note")
    if isinstance(plan_note, str) and plan_note:
        notes.append(plan_note)
    return {"note": " ".join(notes), "plots": plots, "tables": [
        table("Curves", ["curve", "peak busbw", "busbw at largest", "largest message", "knee", "startup time", "transports NCCL chose"],
              curve_rows, "no curve was measured")] + _ring_tables(data) + [
        table("NCCL and its environment (variables that change its behaviour, as set for the run)", ["what", "value"],
              environment_rows, "not recorded"),
        table("Sweep (busbw = algbw × 2(n−1)/n, nccl-tests)",
              ["curve", "message", "time per all-reduce", "algbw", "busbw", "iterations", "verified"], sweep_rows, "no sweep")]}
