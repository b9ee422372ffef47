"""The measurement probes' dossier sections, from the H200 rig's recorded results."""
import json
import os

from ansible_collections.gpufleet.validation.plugins.plugin_utils.report_measurements import gemm_view, hostbw_view, membw_view

RIG_RUN = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))),
                       "docs", "examples", "h200x2", "20261130T035514Z-509823", "localhost")


def data_of(probe):
    with open(os.path.join(RIG_RUN, probe + ".json")) as handle:
        return json.load(handle)["data"]


def texts(table):
    return [[cell.text for cell in row] for row in table["rows"]]


def test_membw_section_has_the_headline_the_sweep_and_a_plot_with_the_plateau():
    view = membw_view(data_of("membw"))
    headline, sweep = view["tables"]
    assert [row[:3] for row in texts(headline)] == [["GPU 0 (GPU-1e49e0ec)", "4246.29 GB/s", "plateau"],
                                                    ["GPU 1 (GPU-81d01bd3)", "4244.4 GB/s", "plateau"]]
    assert len(sweep["rows"]) == 12 and texts(sweep)[0][3] == "launch/cache dominated"
    assert "read + written" in view["note"]
    assert len(view["plots"]) == 1 and "plateau" in view["plots"][0] and "<script" not in view["plots"][0]


def test_gemm_section_explains_every_shape_and_plots_the_roofline():
    view = gemm_view(data_of("gemm"))
    best, shapes = view["tables"]
    bf16 = [row for row in texts(best) if row[:2] == ["GPU 0 (GPU-1e49e0ec)", "bf16"]]
    assert [row[2:4] for row in bf16] == [["707.1 TFLOP/s", "prefill-mlp-down-m4096-n8192-k28672"]]
    square = [row for row in texts(shapes) if row[1] == "bf16" and row[2] == "square-8192"][0]
    assert square[4] == "compute-bound" and "sw_power_cap" in square[7]
    assert "Roofline of GPU 0" in view["plots"][0] and view["plots"][0].count("<circle") > 50


def test_hostbw_section_lists_every_copy_with_its_share_of_the_link():
    rows = texts(hostbw_view(data_of("hostbw"))["tables"][0])
    assert [row[1] for row in rows[:5]] == ["pinned H2D", "pinned D2H", "pinned BIDIRECTIONAL", "pageable H2D", "pageable D2H"]
    assert rows[0][2] == "55.379 GB/s" and "no NUMA affinity information" in rows[0][6]
