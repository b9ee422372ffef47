"""p2p: its section of the dossier, the heat maps of every ordered pair and the tables of pairs and sweeps."""
from __future__ import annotations

from typing import Any, Dict, List, Optional, Tuple

from ...probe_kit.kit import (
    Cell, cell, table, MISSING, dig, is_unavailable, number_or_none, heatmap_chart, line_chart, line_points, ProbeSection)

MAX_PLOTTED_PAIRS = 8


def _pairs(data: Any) -> List[Dict[str, Any]]:
    pairs = dig(data, "pairs")
    return [pair for pair in pairs if isinstance(pair, dict)] if isinstance(pairs, list) else []


def _gpu_indices(data: Any, pairs: List[Dict[str, Any]]) -> List[int]:
    devices = dig(data, "devices")
    indices = [device.get("index") for device in devices if isinstance(device, dict)] if isinstance(devices, list) else []
    indices += [pair.get(end) for pair in pairs for end in ("src", "dst")]
    return sorted({index for index in indices if isinstance(index, int) and not isinstance(index, bool)})


def _link_text(pair: Dict[str, Any]) -> str:
    link = pair.get("link_class")
    return link if isinstance(link, str) else "?"


def _numa_text(pair: Dict[str, Any]) -> str:
    values = [pair.get("numa_node_src"), pair.get("numa_node_dst")]
    if any(is_unavailable(value) or value is None for value in values):
        return "unknown"
    same = pair.get("same_numa")
    return "%s → %s%s" % (values[0], values[1], " (same node)" if same is True else " (across nodes)" if same is False else "")


def _matrix(pairs: List[Dict[str, Any]], indices: List[int], section: str) -> Tuple[List[List[Optional[float]]], List[List[str]]]:
    position = {index: order for order, index in enumerate(indices)}
    values: List[List[Optional[float]]] = [[None] * len(indices) for unused_row in indices]
    notes: List[List[str]] = [[""] * len(indices) for unused_row in indices]
    for pair in pairs:
        row, column = position.get(pair.get("src")), position.get(pair.get("dst"))
        if row is None or column is None:
            continue
        part = pair.get(section) if isinstance(pair.get(section), dict) else {}
        values[row][column] = number_or_none(part.get("headline_gbps"))
        notes[row][column] = "failed" if pair.get("error") and values[row][column] is None else _link_text(pair)
    return values, notes


def _headline_cell(pair: Dict[str, Any], section: str) -> Cell:
    part = pair.get(section) if isinstance(pair.get(section), dict) else {}
    if pair.get("error") and number_or_none(part.get("headline_gbps")) is None:
        return Cell("failed", str(pair["error"]), "bad")
    source = part.get("headline_source")
    flag = "warn" if source and source != "plateau" else ""
    result = cell("headline_gbps", part.get("headline_gbps", MISSING), flag)
    if source and source != "plateau":
        result = Cell(result.text, "no plateau: %s" % dig(part, "plateau", "reason"), flag)
    return result


def p2p_view(data: Any) -> Dict[str, Any]:
    pairs = _pairs(data)
    indices = _gpu_indices(data, pairs)
    labels = ["GPU %d" % index for index in indices]
    plots = []
    if len(indices) >= 2:
        for section, words in (("unidirectional", "unidirectional copy"), ("bidirectional", "bidirectional copy, both directions summed")):
            values, notes = _matrix(pairs, indices, section)
            if any(value is not None for row in values for value in row):
                plots.append(heatmap_chart("P2P %s (plateau GB/s), link class in each cell" % words, labels, values, "GB/s", notes,
                                           data_note="The numbers: the table 'Every ordered pair' below."))
    pair_rows, sweep_rows, series = [], [], []
    for pair in pairs:
        name = "%s → %s" % (pair.get("src"), pair.get("dst"))
        latency = pair.get("latency") if isinstance(pair.get("latency"), dict) else {}
        pair_rows.append([Cell(name), Cell(_link_text(pair)), Cell(_numa_text(pair)),
                          cell("peer_access", pair.get("peer_access", MISSING), "bad" if pair.get("peer_access") is False else ""),
                          _headline_cell(pair, "unidirectional"), _headline_cell(pair, "bidirectional"),
                          cell("median_us", latency.get("median_us", MISSING)),
                          cell("verified", pair.get("verified", MISSING), "bad" if pair.get("verified") is False else "")])
        unidirectional = pair.get("unidirectional") if isinstance(pair.get("unidirectional"), dict) else {}
        sweep = [point for point in unidirectional.get("sweep") or [] if isinstance(point, dict)]
        for point in sweep:
            sweep_rows.append([Cell(name), cell("size_bytes", point.get("size_bytes", MISSING)), cell("gbps", point.get("gbps", MISSING)),
                               cell("time_per_copy_s", point.get("time_per_copy_s", MISSING)),
                               cell("verified", point.get("verified", MISSING), "bad" if point.get("verified") is False else "")])
        points = line_points(sweep, "size_bytes", "gbps")
        if points:
            series.append(("%s (%s)" % (name, _link_text(pair)), points))
    if series and len(series) <= MAX_PLOTTED_PAIRS:
        plots.append(line_chart("Unidirectional P2P bandwidth by copy size", series, "B", "GB/s", log_x=True,
                                x_name="copy size", y_name="bandwidth",
                                data_note="The numbers: the table 'Unidirectional sweep' below."))
    method = dig(data, "method")
    columns = ["pair", "link", "NUMA", "peer access", "unidirectional", "bidirectional", "small-copy time", "verified"]
    return {"note": " ".join(str(value) for value in method.values()) if isinstance(method, dict) else "",
            "plots": plots, "tables": [
                table("Every ordered pair", columns, pair_rows, "no pair was measured (fewer than two GPUs, or the probe failed)"),
                table("Unidirectional sweep", ["pair", "copy size", "bandwidth", "time per copy", "verified"], sweep_rows,
                      "no sweep")]}


SECTION = ProbeSection(p2p_view)
