import math
from xml.etree import ElementTree

from ansible_collections.gpufleet.validation.plugins.plugin_utils.svg_plots import bar_chart, compact_number, heatmap_chart, line_chart


def test_bar_chart_is_well_formed_escaped_and_shows_units():
    svg = bar_chart("<script>alert(1)</script>", ["GPU 0", "a&b"], [73.5, None], "W",
                    references=[("datasheet", 700)], markers=[[("limit", 650)], []])
    ElementTree.fromstring(svg)
    assert "<script>" not in svg and "&lt;script&gt;" in svg
    assert "73.5 W" in svg and "n/a" in svg and "limit: 650 W" in svg and "datasheet: 700 W" in svg


def test_line_chart_handles_log_x_markers_and_bad_points():
    svg = line_chart("bandwidth sweep", [("copy <ce>", [(4, 100.0), (4096, 3900.0), (0, 5.0), (64, math.nan)]),
                                         ("empty", [])], "MiB", "GB/s", log_x=True, marker_x=256, marker_label="plateau")
    ElementTree.fromstring(svg)
    assert "copy &lt;ce&gt;" in svg and "plateau" in svg and "<polyline" in svg
    assert "no data to plot" in line_chart("t", [("s", [])], "B", "s")


def test_log_axis_labels_are_compact():
    assert [compact_number(value) for value in (8, 100, 1000, 1e6, 1073741824, 2.5e12)] == ["8", "100", "1k", "1M", "1.074G", "2.5T"]


def test_heat_map_is_well_formed_escaped_and_marks_missing_pairs():
    svg = heatmap_chart("P2P <b>", ["GPU 0", "GPU 1", "GPU 2"], [[None, 390.0, None], [380.0, None, 40.0], [None, 41.0, None]],
                        "GB/s", [["", "NV18", "failed"], ["NV18", "", "SYS"], ["<x>", "SYS", ""]])
    ElementTree.fromstring(svg)
    assert "<b>" not in svg and "&lt;x&gt;" in svg
    assert "390" in svg and "n/a" in svg and "failed" in svg and "SYS" in svg
    assert svg.count("<rect") == 9
