"""Dossier section of the precision probe: each tensor's statistics and how every number format represents it."""
from __future__ import annotations

from typing import Any, Dict, List

from ...probe_kit.kit import Cell, cell, table, MISSING, dig, ProbeSection


def _tensors(data: Any) -> List[Dict[str, Any]]:
    tensors = dig(data, "tensors")
    return [tensor for tensor in tensors if isinstance(tensor, dict)] if isinstance(tensors, list) else []


def _shape(tensor: Dict[str, Any]) -> str:
    shape = tensor.get("shape")
    return " × ".join(str(size) for size in shape) if isinstance(shape, list) else "?"


def _stat_row(name: str, tensor: Dict[str, Any]) -> List[Cell]:
    if tensor.get("error"):
        return [Cell(name), Cell("failed", str(tensor["error"]), "bad")] + [Cell("—")] * 7
    stats = tensor.get("stats") if isinstance(tensor.get("stats"), dict) else {}
    channels = stats.get("channel_absmax") if isinstance(stats.get("channel_absmax"), dict) else {}
    return [Cell(name, str(tensor.get("picked_by", ""))), Cell("%s %s" % (_shape(tensor), tensor.get("dtype", ""))),
            cell("min", stats.get("min", MISSING)), cell("max", stats.get("max", MISSING)),
            cell("absmax", stats.get("absmax", MISSING)), cell("std", stats.get("std", MISSING)),
            cell("kurtosis_pearson", stats.get("kurtosis_pearson", MISSING)),
            cell("outlier_fraction", stats.get("outlier_fraction", MISSING)),
            Cell("%s … %s (max / median %s)" % (
                cell("min", channels.get("min", MISSING)).text, cell("max", channels.get("max", MISSING)).text,
                cell("ratio", channels.get("max_over_median", MISSING)).text))]


def _format_row(name: str, entry: Dict[str, Any]) -> List[Cell]:
    sqnr = entry.get("sqnr_db")
    return [Cell(name), Cell(str(entry.get("label") or entry.get("format", "?")), str(entry.get("scale_note", ""))),
            cell("bits_per_element", entry.get("effective_bits_per_element", entry.get("bits_per_element", MISSING))),
            cell("relative_error", entry.get("relative_error", MISSING)),
            Cell("exact") if entry.get("exact") else cell("sqnr_db", sqnr if sqnr is not None else MISSING),
            cell("flushed_to_zero_count", entry.get("flushed_to_zero_count", MISSING)),
            cell("overflow_count", entry.get("overflow_count", MISSING),
                 "bad" if isinstance(entry.get("overflow_count"), int) and entry["overflow_count"] > 0 else "")]


def _ranking_row(name: str, tensor: Dict[str, Any]) -> List[Cell]:
    return [Cell(name), Cell(" > ".join(str(item) for item in tensor.get("ranking_by_bits") or [])),
            Cell(" > ".join(str(item) for item in tensor.get("ranking_by_sqnr") or []))]


def _head(data: Any) -> List[str]:
    checkpoint = dig(data, "checkpoint")
    head = []
    if isinstance(checkpoint, dict) and isinstance(checkpoint.get("description"), str):
        head.append("Checkpoint: %s." % checkpoint["description"])
    elif isinstance(checkpoint, dict):  # results from before the description was recorded
        head.append("Checkpoint %s (%s, sha256 %s)." % (checkpoint.get("path", "?"), checkpoint.get("source", "?"),
                                                        str(checkpoint.get("sha256", "?"))[:16]))
    device = dig(data, "device")
    if isinstance(device, dict):
        head.append("Computed on %s." % (device.get("name") or device.get("kind", "?")))
    head.append("SQNR = 10 log10(Σx² / Σ(x − q)²); no claim about model quality is made.")
    return head


def precision_view(data: Any) -> Dict[str, Any]:
    named = [(str(tensor.get("name", "?")), tensor) for tensor in _tensors(data)]
    read = [(name, tensor) for name, tensor in named if not tensor.get("error")]  # a failed tensor has its stat row only
    format_rows = [_format_row(name, entry) for name, tensor in read for entry in tensor.get("formats") or [] if isinstance(entry, dict)]
    notes = ["%s: %s" % (name, tensor["explanation"]) for name, tensor in read if isinstance(tensor.get("explanation"), str)]
    return {"note": " ".join(_head(data) + notes), "plots": [], "tables": [
        table("Tensors", ["tensor (how it was picked)", "shape, dtype", "min", "max", "|max|", "std", "kurtosis (Pearson)",
                          "outlier fraction", "per-row |max|"], [_stat_row(name, tensor) for name, tensor in named], "no tensor was read"),
        table("Representation error per format",
              ["tensor", "format (scale)", "bits per element", "relative error", "SQNR dB", "flushed to zero", "overflow"],
              format_rows, "no format was measured"),
        table("Ranking: by storage width, and by error (best first)", ["tensor", "by bits", "by SQNR"],
              [_ranking_row(name, tensor) for name, tensor in read], "no ranking")]}


SECTION = ProbeSection(precision_view)
