"""The load probe's dossier section, from the H200 rig's recorded result: clocks rising under load, plotted over time."""
import json
import os

from ansible_collections.gpufleet.validation.plugins.plugin_utils.probes.load.view import load_view

RIG_RUN = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))),
                       "docs", "examples", "h200x2", "20261130T054132Z-520925", "localhost")


def texts(table):
    return [[cell.text for cell in row] for row in table["rows"]]


def test_load_section_plots_clocks_power_temperature_from_idle_through_the_load():
    with open(os.path.join(RIG_RUN, "load.json")) as handle:
        data = json.load(handle)["data"]
    view = load_view(data)
    assert len(view["plots"]) == 3
    clock_plot = view["plots"][0]
    assert "SM clock under load" in clock_plot and clock_plot.count("<polyline") == 2
    under_load, idle, processes = view["tables"]
    rows = texts(under_load)
    assert [row[0] for row in rows] == ["GPU 0", "GPU 1"]
    assert rows[0][1] == "667 TFLOP/s" and "1455 MHz is 1110 MHz above the idle 345 MHz" in rows[0][2]
    assert rows[0][3] == "sw_power_cap 100 %" and under_load["rows"][0][3].flag == ""
    clocks = [row for row in texts(idle) if row[:2] == ["GPU 0", "SM clock"]][0]
    assert clocks[2:5] == ["345 MHz", "1455 MHz", "1515 MHz"]
    assert [row[3] for row in texts(processes)] == ["the probe"] * len(processes["rows"])
    assert "60 s of bf16 8192×8192 matmuls" in view["note"]
