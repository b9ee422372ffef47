"""The measurement probes' dossier sections, from the H200 rig's recorded results."""
import json
import os

from ansible_collections.gpufleet.validation.plugins.plugin_utils.probes.gemm.view import gemm_view
from ansible_collections.gpufleet.validation.plugins.plugin_utils.probes.hostbw.view import hostbw_view
from ansible_collections.gpufleet.validation.plugins.plugin_utils.probes.membw.judging import membw_measurements
from ansible_collections.gpufleet.validation.plugins.plugin_utils.probes.membw.view import membw_view
from ansible_collections.gpufleet.validation.plugins.plugin_utils.store.schemas import envelope_problems

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
    assert [row[:3] for row in texts(headline)] == [["GPU 0 (GPU-1e49e0ec)", "4246 GB/s", "plateau"],
                                                    ["GPU 1 (GPU-81d01bd3)", "4244 GB/s", "plateau"]]
    assert len(sweep["rows"]) == 12 and texts(sweep)[0][3] == "launch/cache dominated"
    assert "read + written" in view["note"]
    assert len(view["plots"]) == 1 and "plateau" in view["plots"][0] and "<script" not in view["plots"][0]


def test_gemm_section_explains_every_shape_and_plots_the_roofline():
    view = gemm_view(data_of("gemm"))
    best, shapes = view["tables"]
    bf16 = [row for row in texts(best) if row[:2] == ["GPU 0 (GPU-1e49e0ec)", "bf16"]]
    assert [row[2:4] for row in bf16] == [["707 TFLOP/s", "prefill-mlp-down-m4096-n8192-k28672"]]
    square = [row for row in texts(shapes) if row[1] == "bf16" and row[2] == "square-8192"][0]
    assert square[4] == "compute-bound" and "sw_power_cap" in square[7]
    assert "Roofline of GPU 0" in view["plots"][0] and view["plots"][0].count(" TFLOP/s</title>") > 50


def test_hostbw_section_lists_every_copy_with_its_share_of_the_link():
    rows = texts(hostbw_view(data_of("hostbw"))["tables"][0])
    assert [row[1] for row in rows[:5]] == ["pinned H2D", "pinned D2H", "pinned BIDIRECTIONAL", "pageable H2D", "pageable D2H"]
    assert rows[0][2] == "55.4 GB/s" and "no NUMA affinity information" in rows[0][6]


def envelope_of(probe, data):
    with open(os.path.join(RIG_RUN, probe + ".json")) as handle:
        envelope = json.load(handle)
    envelope["data"] = data
    return envelope


def test_a_membw_device_that_failed_shows_its_error_in_words_in_the_dossier_and_the_judge():
    data = data_of("membw")
    data["devices"][1] = {"device": data["devices"][1]["device"], "status": "error", "problems": [],
                          "error": {"type": "RuntimeError", "message": "CUDA error: out of memory"}}
    assert envelope_problems(envelope_of("membw", data)) == []
    failed = texts(membw_view(data)["tables"][0])[1]
    assert failed[1] == "failed"
    assert membw_view(data)["tables"][0]["rows"][1][1].note == "RuntimeError: CUDA error: out of memory"
    [missing] = [found.missing for found in membw_measurements(data) if found.missing is not None]
    assert missing.reason == "RuntimeError: CUDA error: out of memory"


def test_a_gemm_shape_that_was_not_measured_shows_the_probes_reason():
    data = data_of("gemm")
    shape = data["devices"][0]["results"][0]
    shape["measurement"] = {"unavailable": "needs 3.2 GiB, 1.1 GiB free"}
    assert envelope_problems(envelope_of("gemm", data)) == []
    rows = gemm_view(data)["tables"][1]["rows"]
    rate = rows[0][5]
    assert (rate.text, rate.note) == ("n/a", "needs 3.2 GiB, 1.1 GiB free")
