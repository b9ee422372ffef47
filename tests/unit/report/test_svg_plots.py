"""The hand-written SVG charts: round ticks, labels that do not overlap or leave the chart, a text alternative."""
import json
import math
import os
import random
import re
from xml.etree import ElementTree

import pytest

from ansible_collections.gpufleet.validation.plugins.plugin_utils.probes.collective.view import collective_view
from ansible_collections.gpufleet.validation.plugins.plugin_utils.probes.gemm.view import gemm_view
from ansible_collections.gpufleet.validation.plugins.plugin_utils.probes.health.view import power_plot
from ansible_collections.gpufleet.validation.plugins.plugin_utils.probes.load.view import load_view
from ansible_collections.gpufleet.validation.plugins.plugin_utils.probes.membw.view import membw_view
from ansible_collections.gpufleet.validation.plugins.plugin_utils.probes.p2p.view import p2p_view
from ansible_collections.gpufleet.validation.plugins.plugin_utils.report.svg_plots import (
    Plot, bar_chart, compact_number, heatmap_chart, line_chart, line_points, linear_ticks, log_ticks, nice_number, roofline_chart,
    text_width, tick_label)

EXAMPLES = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))),
                        "docs", "examples")
RIG_RUN = os.path.join(EXAMPLES, "h200x2", "20261130T054132Z-520925", "localhost")
SVG = "{http://www.w3.org/2000/svg}"


def data_of(probe):
    with open(os.path.join(RIG_RUN, probe + ".json")) as handle:
        return json.load(handle)["data"]


def rig_plots():
    """Every chart the dossier of the 2-GPU rig run draws, from its recorded results."""
    plots = [("power", power_plot(data_of("health")["gpus"]))]
    for name, view in (("collective", collective_view), ("gemm", gemm_view), ("load", load_view), ("membw", membw_view),
                       ("p2p", p2p_view)):
        plots += [(name, plot) for plot in view(data_of(name))["plots"]]
    return plots


def text_boxes(svg):
    """(x0, y0, x1, y1, text) of every <text> outside a tooltip, from the same width estimate the charts lay out with."""
    root = ElementTree.fromstring(svg)
    boxes = []
    for element in root.iter(SVG + "text"):
        content = "".join(element.itertext())
        size = float(element.get("font-size", root.get("font-size")))
        width = text_width(content, size, element.get("font-weight") == "bold")
        x, y = float(element.get("x")), float(element.get("y"))
        anchor = element.get("text-anchor", "start")
        x0 = x - {"start": 0, "middle": width / 2, "end": width}[anchor]
        box = (x0, y - 0.8 * size, x0 + width, y + 0.2 * size, content)
        rotation = re.match(r"rotate\(-90 ([\d.]+) ([\d.]+)\)", element.get("transform", ""))
        if rotation:  # turned a quarter about (cx, cy): x runs up the page
            cx, cy = float(rotation.group(1)), float(rotation.group(2))
            box = (cx - (cy - box[1]), cy - (box[2] - cx), cx + (box[3] - cy), cy + (cx - box[0]), content)
        boxes.append(box)
    return root, boxes


def overlaps(first, second):
    return first[0] < second[2] - 0.5 and second[0] < first[2] - 0.5 and first[1] < second[3] - 0.5 and second[1] < first[3] - 0.5


def assert_readable(svg):
    root, boxes = text_boxes(svg)
    width, height = float(root.get("width")), float(root.get("height"))
    for box in boxes:
        assert box[0] >= -0.5 and box[2] <= width + 0.5 and box[1] >= -0.5 and box[3] <= height + 0.5, ("outside the chart", box, width, height)
    for index, box in enumerate(boxes):
        for other in boxes[index + 1:]:
            assert not overlaps(box, other), ("labels overlap", box, other)
    return root, boxes


def is_round(value):
    """At most two significant digits, as every multiple of a 1-2-5 step among ten ticks is (1500, 0.25; not 1.56375)."""
    if value == 0:
        return True
    mantissa = abs(value) / 10.0 ** math.floor(math.log10(abs(value)) + 1e-9)
    return abs(mantissa * 10 - round(mantissa * 10)) < 1e-6


def test_a_sweep_s_points_are_its_records_with_a_nonzero_number_and_a_number():
    sweep = [{"size_bytes": 1024, "gbps": 3}, {"size_bytes": 0, "gbps": 4.0}, {"size_bytes": 2048, "gbps": None},
             {"size_bytes": True, "gbps": 5.0}, {"size_bytes": 4096, "gbps": False}, {"gbps": 6.0}, {"size_bytes": 8192.0, "gbps": 0}]
    assert line_points(sweep, "size_bytes", "gbps") == [(1024.0, 3.0), (8192.0, 0.0)]


def test_nice_numbers_are_one_two_five():
    assert [nice_number(value, True) for value in (0.78187, 1.56375, 19.485, 77.94, 3.4)] == [1, 2, 20, 100, 5]
    assert [nice_number(value, False) for value in (0.78187, 1.56375, 19.485, 77.94, 3.4)] == [1, 2, 20, 100, 5]
    assert nice_number(1.2, True) == 1 and nice_number(1.2, False) == 2


@pytest.mark.parametrize("low, high, expected", [
    (0, 325.835, [0, 100, 200, 300, 400]),         # the all-reduce busbw axis that read 81.4587, 162.917, ...
    (0, 5101.48, [0, 1000, 2000, 3000, 4000, 5000, 6000]),
    (0, 1.56375, [0, 0.5, 1, 1.5, 2]),
    (0, 77.94, [0, 20, 40, 60, 80]),
    (0, 1980, [0, 500, 1000, 1500, 2000]),
    (20, 20, [0, 5, 10, 15, 20]),
])
def test_value_axes_start_at_zero_and_end_on_a_round_tick(low, high, expected):
    axis_low, axis_high, ticks, decimals = linear_ticks(low, high)
    assert ticks == expected and axis_low == ticks[0] and axis_high == ticks[-1] >= high


def test_a_time_axis_keeps_its_range_and_ticks_inside_it():
    axis_low, axis_high, ticks, decimals = linear_ticks(-0.429, 65.135, loose=False)
    assert (axis_low, axis_high) == (-0.429, 65.135) and ticks == [0, 20, 40, 60]
    assert [tick_label(tick, decimals) for tick in ticks] == ["0", "20", "40", "60"]


def test_ticks_of_any_range_are_round_and_their_labels_carry_the_step_s_digits():
    rng = random.Random(7)
    for unused in range(2000):
        low = rng.choice([0.0, rng.uniform(-1e3, 1e3)]) * 10 ** rng.randint(-4, 3)
        high = low + rng.uniform(1e-3, 1e4) * 10 ** rng.randint(-3, 2)
        axis_low, axis_high, ticks, decimals = linear_ticks(low, high)
        steps = {round(second - first, decimals + 6) for first, second in zip(ticks, ticks[1:])}
        assert len(steps) == 1 and 3 <= len(ticks) <= 11, (low, high, ticks)
        step = steps.pop()
        mantissa = step / 10.0 ** math.floor(math.log10(step) + 1e-9)
        assert min(abs(mantissa - nice) for nice in (1, 2, 5, 10)) < 1e-6, (low, high, step)
        assert axis_low <= low and axis_high >= high
        labels = [tick_label(tick, decimals) for tick in ticks]
        assert len(set(labels)) == len(labels), labels  # enough digits to tell every tick apart
        assert all(len(label.rstrip("kMGT").split(".")[1]) <= max(0, decimals + 12) for label in labels if "." in label)
        assert all(len(label.split(".")[1]) == decimals for label in labels if decimals > 0 and abs(high) < 1e5)


def test_log_axes_tick_at_powers_of_ten_and_at_two_and_five_over_a_short_span():
    unused_low, unused_high, ticks, minor = log_ticks(8, 2 ** 30)
    assert [compact_number(tick) for tick in ticks] == ["10", "100", "1k", "10k", "100k", "1M", "10M", "100M", "1G"]
    assert 20 in minor and 5e8 in minor
    unused_low, unused_high, ticks, minor = log_ticks(2 ** 22, 2 ** 28)
    assert [compact_number(tick) for tick in ticks] == ["5M", "10M", "20M", "50M", "100M", "200M"]
    unused_low, unused_high, ticks, minor = log_ticks(4, 4096)
    assert ticks == [10, 100, 1000]


def test_compact_labels():
    assert [compact_number(value) for value in (8, 100, 1000, 1e6, 1073741824, 2.5e12, 0.5)] == \
        ["8", "100", "1k", "1M", "1.074G", "2.5T", "0.5"]
    assert [tick_label(value, 1) for value in (0, 0.5, 1.5)] == ["0.0", "0.5", "1.5"]
    assert tick_label(200000, -5) == "200k" and tick_label(554500, -2) == "554.5k" and tick_label(-0.0, 0) == "0"


def test_bar_chart_is_well_formed_escaped_and_shows_units():
    svg = bar_chart("<script>alert(1)</script>", ["GPU 0", "a&b"], [73.5, None], "W",
                    references=[("datasheet", 700)], markers=[[("limit", 650)], []], value_name="power draw")
    assert_readable(svg)
    assert "<script>" not in svg and "&lt;script&gt;" in svg
    assert "73.5 W" in svg and "n/a" in svg and "limit: 650 W" in svg and "datasheet: 700 W" in svg
    assert "power draw (W)" in svg and ">800<" in svg  # an axis from 0 to the round tick above the datasheet tick


def test_line_chart_handles_log_x_markers_and_bad_points():
    svg = line_chart("bandwidth sweep", [("copy <ce>", [(4, 100.0), (4096, 3900.0), (0, 5.0), (64, math.nan)]),
                                         ("empty", [])], "MiB", "GB/s", log_x=True, marker_x=256, marker_label="plateau",
                     x_name="buffer size", y_name="bandwidth")
    assert_readable(svg)
    assert "copy &lt;ce&gt;" in svg and "plateau: 256 MiB" in svg and "<polyline" in svg
    assert "buffer size (MiB)" in svg and "bandwidth (GB/s)" in svg
    assert "no data to plot" in line_chart("t", [("s", [])], "B", "s")


def test_knee_markers_take_the_colour_of_their_own_curve():
    svg = line_chart("t", [("a", [(1, 1.0), (10, 2.0)]), ("b", [(1, 1.0), (10, 3.0)])], "B", "GB/s", log_x=True,
                     markers=[(5, "knee b", "b")])
    assert re.search(r'stroke="#d62728" stroke-width="1.5" stroke-dasharray="5 3"><title>knee b', svg)


def test_heat_map_is_well_formed_escaped_and_marks_missing_pairs():
    svg = heatmap_chart("P2P <b>", ["GPU 0", "GPU 1", "GPU 2"], [[None, 390.0, None], [380.0, None, 40.0], [None, 41.0, None]],
                        "GB/s", [["", "NV18", "failed"], ["NV18", "", "SYS"], ["<x>", "SYS", ""]])
    assert_readable(svg)
    assert "<b>" not in svg and "&lt;x&gt;" in svg
    assert "390" in svg and "n/a" in svg and "failed" in svg and "SYS" in svg
    assert svg.count("<rect") == 9
    assert "4 of 6 pairs measured; highest GPU 0 → GPU 1: 390 GB/s (NV18); lowest GPU 1 → GPU 2: 40 GB/s (SYS)" in svg.description


def test_every_chart_has_a_text_alternative():
    charts = [chart for unused_name, chart in rig_plots()]
    charts += [bar_chart("b", ["x"], [1.0], "W"), line_chart("l", [("s", [])], "B", "s"), roofline_chart("r", [], [])]
    for chart in charts:
        assert isinstance(chart, Plot)
        root = ElementTree.fromstring(chart)
        assert root.get("role") == "img"
        title = root.find(SVG + "title")
        desc = root.find(SVG + "desc")
        assert root.get("aria-labelledby") == title.get("id") and root.get("aria-describedby") == desc.get("id")
        assert title.text == chart.heading and desc.text == chart.description
        assert len(chart.description) > 15 and chart.description.endswith(".")
        assert root.get("viewBox") == "0 0 %s %s" % (root.get("width"), root.get("height")) and float(root.get("height")) > 40


def test_the_rig_s_charts_have_round_ticks_titled_axes_and_no_overlapping_label():
    plots = rig_plots()
    assert sorted({name for name, unused in plots}) == ["collective", "gemm", "load", "membw", "p2p", "power"]
    for name, chart in plots:
        root, boxes = assert_readable(chart)
        if name == "p2p" and "Matrix" in chart.description:
            continue
        texts = [box[4] for box in boxes]
        numbers = [float(text.rstrip("kMG")) * {"k": 1e3, "M": 1e6, "G": 1e9}.get(text[-1], 1)
                   for text in texts if re.fullmatch(r"-?\d+(\.\d+)?[kMG]?", text)]
        assert numbers and all(is_round(number) for number in numbers), (name, numbers)
        assert any(re.search(r"\(.+\)$", text) for text in texts), (name, texts)  # an axis title with its unit
        assert chart.data_note


def test_collective_description_names_the_knees_with_their_sizes():
    (chart,) = collective_view(data_of("collective"))["plots"]
    assert "knee default at 12.95 MB" in chart.description and "message size per rank (B)" in chart.description
    assert "default: 28 points" in chart.description


def test_the_roofline_puts_its_legend_below_and_its_roof_labels_apart():
    roofs = [("bf16", 989.0, 4246.0), ("fp16", 989.0, 4246.0), ("tf32", 495.0, 4246.0), ("fp32", 480.0, 4246.0),
             ("fp8_e4m3", 1979.0, 4246.0)]
    points = [("bf16", "square", 100.0, 400.0), ("fp16", "square", 100.0, 400.0), ("fp32", "x", 2000.0, 52.0)]
    chart = roofline_chart("Roofline", roofs, points)
    root, boxes = assert_readable(chart)
    frame = [element for element in root.iter(SVG + "rect") if element.get("fill") == "none"][0]
    right = float(frame.get("x")) + float(frame.get("width"))
    bottom = float(frame.get("y")) + float(frame.get("height"))
    labels = {box[4]: box for box in boxes}
    roof_labels = [labels[text] for text in ("fp8_e4m3: 1979", "bf16, fp16: 989", "tf32: 495", "fp32: 480")]
    assert all(box[0] > right for box in roof_labels)  # right of the plot area, where no point or legend is
    assert all(labels[name][1] > bottom for name in ("bf16", "fp16", "fp32"))  # the legend below it
    assert "Roofs: fp8_e4m3 1979 TFLOP/s, bf16, fp16 989 TFLOP/s" in chart.description


def test_the_rig_s_roofline_has_its_dtypes_in_the_legend_under_the_plot():
    (chart,) = gemm_view(data_of("gemm"))["plots"]
    root, boxes = assert_readable(chart)
    assert {"bf16", "fp16", "fp32", "tf32", "fp8_e4m3"} <= {box[4] for box in boxes}
    assert "rate (TFLOP/s)" in chart and "arithmetic intensity (FLOP/byte)" in chart
