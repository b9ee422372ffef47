"""The fusion probe's dossier view: per device a table of the sizes (bytes, time and bandwidth each way, share of the
membw plateau, predicted vs measured speed-up and why they differ) and a plot of achieved bandwidth against N."""
from __future__ import annotations

from typing import Any, Dict, List, Optional, Tuple

from ...probe_kit.kit import (
    format_number, format_quantity, Cell, cell, table, MISSING, dig, error_words, is_unavailable, number_or_none,
    line_chart, ProbeSection, beside_cells, together_table)

COLUMNS = ["N (elements)", "bytes unfused", "bytes fused", "time unfused", "time fused", "GB/s unfused", "GB/s fused",
           "% of membw unfused", "% of membw fused", "speed-up predicted", "speed-up measured", "outputs agree", "why"]

VERSION_KEYS = ("traffic_bytes", "time_per_iteration_s", "achieved_gbps", "of_membw_pct")


def _label(device: Dict[str, Any]) -> str:
    return "%s:%s %s" % (device.get("kind", "?"), device.get("index", "?"), device.get("name", ""))


def _version_cells(point: Dict[str, Any], version_key: str) -> Tuple[Cell, ...]:
    """bytes, time, GB/s and % of membw of one version, in that order."""
    version = point.get(version_key, MISSING)
    return tuple(cell(key, dig(version, key)) for key in VERSION_KEYS)


def _speedup(value: Any) -> Cell:
    number = number_or_none(value)
    if number is None:
        return cell(None, value)
    return Cell(format_number(number) + "x")


def _row(point: Dict[str, Any]) -> List[Cell]:
    unfused, fused = _version_cells(point, "unfused"), _version_cells(point, "fused")
    agree = dig(point, "verification", "outputs_agree")
    diff = dig(point, "verification", "max_abs_diff")
    agree_cell = cell(None, agree, "bad" if agree is False else "")
    if number_or_none(diff) is not None:
        agree_cell = Cell(agree_cell.text, "max |fused - unfused| = %s" % format_number(diff), agree_cell.flag)
    why = str(point.get("explanation", "—"))
    flagged = point.get("status") == "error"
    return ([cell("elements", point.get("elements", MISSING)), unfused[0], fused[0], unfused[1], fused[1], unfused[2],
             fused[2], unfused[3], fused[3], _speedup(point.get("predicted_speedup", MISSING)),
             _speedup(point.get("measured_speedup", MISSING)), agree_cell,
             Cell(why if not flagged else "%s (%s)" % (point.get("reason", ""), why), "", "bad" if flagged else "")])


def _series(points: List[Dict[str, Any]], key: str) -> List[Tuple[float, float]]:
    found = []
    for point in points:
        elements, gbps = number_or_none(point.get("elements")), number_or_none(dig(point, key, "achieved_gbps"))
        if elements is not None and gbps is not None:
            found.append((elements, gbps))
    return found


def _plot(label: str, points: List[Dict[str, Any]], plateau: Optional[float]) -> Optional[str]:
    unfused, fused = _series(points, "unfused"), _series(points, "fused")
    if not unfused and not fused:
        return None
    series = [("unfused (4 kernels)", unfused), ("fused (compiled)", fused)]
    xs = [x for x, unused_y in unfused + fused]
    if plateau is not None and xs:
        # the membw plateau is one bandwidth for every N: drawn as a flat line across the sweep
        series.append(("membw plateau", [(min(xs), plateau), (max(xs), plateau)]))
    return line_chart("%s: achieved bandwidth of y = gelu(x * a + b) * c by N (bytes counted per version)" % label,
                      series, "elements", "GB/s", log_x=True, x_name="N", y_name="achieved bandwidth",
                      data_note="The numbers: the table '%s: unfused vs fused per N' below." % label)


def fusion_view(data: Any) -> Dict[str, Any]:
    tables, plots = [], []
    devices = data.get("devices") if isinstance(data, dict) and isinstance(data.get("devices"), list) else []
    for entry in devices:
        if not isinstance(entry, dict):
            continue
        device = entry.get("device") if isinstance(entry.get("device"), dict) else {}
        label = _label(device)
        points = [point for point in entry.get("points") or [] if isinstance(point, dict)]
        rows = [_row(point) for point in points]
        if entry.get("error") and not rows:
            rows = [[Cell("failed", error_words(entry["error"]), "bad")] + [Cell("—")] * (len(COLUMNS) - 1)]
        membw = entry.get("membw_bandwidth_gbps", MISSING)
        reference = ("membw plateau %s" % format_quantity(membw, "GB/s") if number_or_none(membw) is not None
                     else "no membw plateau: %s" % (membw.get("unavailable") if is_unavailable(membw) else "not reported"))
        tables.append(table("%s: unfused vs fused per N (%s)" % (label, reference), COLUMNS, rows, "no size was measured"))
        plot = _plot(label, points, number_or_none(membw))
        if plot:
            plots.append(plot)
    derivation = dig(data, "traffic", "derivation")
    note = "Bytes counted: %s" % derivation if isinstance(derivation, str) else ""
    if not tables:
        tables.append(table("Unfused vs fused per N", COLUMNS, [], "no device was measured"))
    together = together_table(data, "Every GPU at once beside the first GPU alone", TOGETHER_COLUMNS, _together_rows)
    return {"note": note, "plots": plots, "tables": ([together] if together else []) + tables}


TOGETHER_COLUMNS = ["worker", "N (elements)", "GB/s unfused together", "GB/s unfused alone", "alone / workers on the device",
                    "together of that", "GB/s fused together", "GB/s fused alone", "alone / workers on the device",
                    "together of that", "speed-up together", "speed-up alone"]


def _together_rows(entry: Dict[str, Any], alone: Dict[str, Any]) -> List[List[Cell]]:
    result = entry.get("result") if isinstance(entry.get("result"), dict) else {}
    row = [cell("elements", result.get("elements", MISSING))]
    for version in ("unfused", "fused"):
        key = "%s_achieved_gbps" % version
        row += beside_cells("achieved_gbps", result.get(key, MISSING), alone.get(key, MISSING), entry)
    row += [_speedup(result.get("measured_speedup", MISSING)), _speedup(alone.get("measured_speedup", MISSING))]
    if result.get("elements") != alone.get("elements"):
        row[0] = Cell(row[0].text, "the alone reference is at %s elements: not the same size" % alone.get("elements"), "warn")
    return [row]


SECTION = ProbeSection(fusion_view)
