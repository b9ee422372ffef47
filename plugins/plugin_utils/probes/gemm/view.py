"""gemm's dossier section: the best rate per dtype, every shape classified before it ran and explained after, and the
roofline of the first GPU."""
from __future__ import annotations

from typing import Any, Dict, List

from ...probe_kit.kit import (
    format_number, Cell, cell, table, device_label, device_records, MISSING, dig, is_unavailable, number_or_none,
    roofline_chart, REASON_COLUMNS, duration_cell, ProbeSection, beside_cells, together_table)
from .correctness_view import verification_table


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
    devices = device_records(data)
    for entry in devices:
        device = entry.get("device") if isinstance(entry.get("device"), dict) else {}
        label = device_label(device)
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
                            % device_label((devices[0].get("device") or {})), roofs, points,
                            data_note="Each shape's numbers: the table 'Every shape: classified before it ran, explained "
                                      "after' below; the roofs: 'Best rate per dtype'.")] if points else []
    conventions = dig(data, "conventions")
    notes = [_gemm_model_note(data)] + ([str(value) for value in conventions.values()] if isinstance(conventions, dict) else [])
    return {"note": " ".join(note for note in notes if note), "plots": plots,
            "tables": [table("Best rate per dtype", ["device", "dtype", "best", "shape", "compute roof (source)"], best_rows,
                             "nothing was measured"),
                       table("Every shape: classified before it ran, explained after", ["device", "dtype", "shape", "FLOP/byte",
                             "classified before timing", "rate", "of its bound", "explanation"], rows, "no shape was measured")]
            + [verified for verified in (verification_table(devices),) if verified["rows"]]}


TOGETHER_COLUMNS = ["worker", "dtype", "sustained together", "sustained alone", "alone / workers on the device",
                    "together of that", "SM clock together", "power together"]
THROTTLE_COLUMNS = ["worker", "window"] + list(REASON_COLUMNS)


def _together_rows(entry: Dict[str, Any], alone: Dict[str, Any]) -> List[List[Cell]]:
    rates = dig(entry, "result", "sustained")
    references = alone.get("sustained") if isinstance(alone.get("sustained"), dict) else {}
    rows = []
    for dtype, record in sorted(rates.items()) if isinstance(rates, dict) else []:
        reference = references.get(dtype, MISSING)
        together = record if is_unavailable(record) else dig(record, "tflops")
        rows.append([Cell(dtype)] + beside_cells("rate_tflops", together, dig(reference, "tflops") if not is_unavailable(reference)
                                                 else reference, entry) +
                    [cell("sm_clock_mhz", dig(record, "sm_clock_mhz_median")), cell("power_w", dig(record, "power_w_median"))])
    return rows


def _throttle_rows(entry: Dict[str, Any], unused_alone: Dict[str, Any]) -> List[List[Cell]]:
    window = dig(entry, "result", "clock_event_durations_window")
    if is_unavailable(window):
        return [[cell("window_s", window)] + [Cell("n/a", window["unavailable"], "na") for unused in REASON_COLUMNS]]
    return [[cell("window_s", dig(window, "window_s"))] +
            [duration_cell(dig(window, "reasons", name), name, "bad") for name in REASON_COLUMNS]]


def gemm_together_tables(data: Any) -> List[Dict[str, Any]]:
    """Every GPU at once beside alone (issue 35): each worker's sustained rate per dtype, and its slowdown time."""
    tables = [together_table(data, "Sustained, every GPU at once beside the first GPU alone", TOGETHER_COLUMNS, _together_rows),
              together_table(data, "Time in each clock-event reason during each worker's together window", THROTTLE_COLUMNS,
                             _throttle_rows)]
    return [entry for entry in tables if entry is not None]


def gemm_section(data: Any) -> Dict[str, Any]:
    view = gemm_view(data)
    view["tables"] = view["tables"][:1] + gemm_together_tables(data) + view["tables"][1:]
    return view


SECTION = ProbeSection(gemm_section)
