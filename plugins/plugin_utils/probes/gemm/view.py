"""gemm's dossier section: the best rate per dtype, every shape classified before it ran and explained after, and the
roofline of the first GPU."""
from __future__ import annotations

from typing import Any, Dict

from ...number_format import format_number
from ...report_cells import Cell, cell, table
from ...report_devices import device_label, device_records
from ...result_fields import MISSING, dig, is_unavailable, number_or_none
from ...svg_plots import roofline_chart
from ..declaration import ProbeSection
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


SECTION = ProbeSection(gemm_view)
