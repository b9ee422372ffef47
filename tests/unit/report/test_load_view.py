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


def test_the_correctness_table_names_the_first_difference_and_the_digest():
    with open(os.path.join(RIG_RUN, "load.json")) as handle:
        data = json.load(handle)["data"]
    clean = {"reference_sha256": "ab" * 32, "multi_processor_count": 132, "checks_run": 40, "every_checkpoints": 8,
             "mismatching_checks": 0, "mismatching_elements": 0, "mismatches": [], "check_gpu_ms": 9.0, "check_cost_pct": 0.38,
             "mode": "bitwise", "deterministic": True, "tolerance": None}
    flipped = dict(clean, mismatching_checks=1, mismatching_elements=1, mismatches=[
        {"check": 2, "product": 128, "differing_elements": 1, "first_index": [1, 1], "first_got": -2.98438,
         "first_expected": 2.98438, "max_abs_diff": 5.96875}])
    data["gpus"][0]["correctness"], data["gpus"][1]["correctness"] = clean, flipped
    checked = next(table for table in load_view(data)["tables"] if table["title"].startswith("Products checked"))
    rows = texts(checked)
    assert rows[0] == ["GPU 0", "bit for bit", "0 of 40 checks", "none", "0.38 %", "abababababababab…"]
    assert rows[1][2] == "1 of 40 checks" and checked["rows"][1][2].flag == "bad"
    assert rows[1][3] == "product 128: 1 element differs, the first at [1, 1] (got -2.98438, expected 2.98438), max |diff| 5.96875"


def test_a_result_from_before_the_checks_has_no_correctness_table():
    with open(os.path.join(RIG_RUN, "load.json")) as handle:
        data = json.load(handle)["data"]
    assert not any(table["title"].startswith("Products checked") for table in load_view(data)["tables"])
