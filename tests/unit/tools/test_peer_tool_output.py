"""benchmarks/peer_tool_output.py against what nccl-tests 2.19.6 and nvbandwidth v0.8 printed on the 1-GPU H200 rig
(tests/data/peer_tools), and benchmarks/peer_tools.py's tables beside the probes' results of the 2-GPU rig."""
import json
import os
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
sys.path.insert(0, os.path.join(ROOT, "benchmarks"))
DATA = os.path.join(ROOT, "tests", "data", "peer_tools")
EXAMPLES = os.path.join(ROOT, "docs", "examples", "h200x2")

import peer_tool_output  # noqa: E402  pylint: disable=wrong-import-position,import-error
import peer_tools  # noqa: E402  pylint: disable=wrong-import-position,import-error


def _text(name):
    with open(os.path.join(DATA, name), encoding="utf-8") as handle:
        return handle.read()


def _probe(run, probe):
    with open(os.path.join(EXAMPLES, run, "localhost", probe + ".json"), encoding="utf-8") as handle:
        return json.load(handle)["data"]


def test_all_reduce_perf_rows_as_printed_on_the_rig():
    parsed = peer_tool_output.parse_all_reduce_perf(_text("all_reduce_perf-h200x1.txt"))
    assert parsed["ranks"] == 1 and parsed["out_of_bounds"] == 0 and parsed["avg_busbw_gbps"] == 0
    assert [row["size_bytes"] for row in parsed["rows"]] == [8 * 2 ** step for step in range(28)]
    last = parsed["rows"][-1]
    assert last["out_of_place"] == {"time_us": 508.95, "algbw_gbps": 2109.7, "busbw_gbps": 0.0, "wrong": 0.0}
    assert last["in_place"]["time_us"] == 1.36 and last["in_place"]["algbw_gbps"] == 789487.0
    assert last["type"] == "float" and last["redop"] == "sum" and last["count"] == 268435456


def test_all_reduce_perf_without_the_data_check_and_with_lines_between_the_rows():
    text = ("#  Rank  0 Group  0 Pid 1 on a device  0 [0000:00:06] NVIDIA H200\n"
            "#  Rank  1 Group  0 Pid 1 on a device  1 [0000:00:07] NVIDIA H200\n"
            "a NCCL INFO line 12 of 13 words that does not start with a size at all, no\n"
            "  1073741824  268435456  float  sum  -1  6585.4  163.05  163.05  N/A  6553.9  163.83  163.83  N/A\n"
            "# Avg bus bandwidth    : 163.4 \n")
    parsed = peer_tool_output.parse_all_reduce_perf(text)
    assert parsed["ranks"] == 2 and parsed["avg_busbw_gbps"] == 163.4
    assert [row["in_place"] for row in parsed["rows"]] == [
        {"time_us": 6553.9, "algbw_gbps": 163.83, "busbw_gbps": 163.83, "wrong": None}]


def test_a_text_without_result_rows_is_refused():
    with pytest.raises(ValueError, match="no all_reduce_perf result row"):
        peer_tool_output.parse_all_reduce_perf("# nccl-tests version 2.19.6\n# error: unhandled cuda error\n")


def test_nvbandwidth_json_as_printed_on_the_rig():
    cases = peer_tool_output.parse_nvbandwidth_json(_text("nvbandwidth-1024MiB-h200x1.json"))
    assert cases["host_to_device_memcpy_ce"]["matrix_gbps"] == [[55.1886]]
    assert cases["host_to_device_memcpy_ce"]["status"] == "Passed"
    assert cases["device_to_device_memcpy_write_ce"] == {"status": "Waived", "matrix_gbps": [], "sum_gbps": None,
                                                         "buffer_size_mib": None, "error": None}
    assert peer_tool_output.matrix_cell(cases["device_to_host_memcpy_ce"], 0, 0) == 54.9292
    assert peer_tool_output.matrix_cell(cases["device_to_host_memcpy_ce"], 0, 1) is None
    assert peer_tool_output.matrix_cell(cases["device_to_device_memcpy_write_ce"], 0, 1) is None


def test_nvbandwidth_matrix_with_its_diagonal_not_measured():
    document = {"nvbandwidth": {"testcases": [{"name": "device_to_device_memcpy_write_ce", "status": "Passed",
                                               "bandwidth_matrix": [["N/A", "392.1"], ["391.9", "N/A"]], "sum": 784.0}]}}
    cases = peer_tool_output.parse_nvbandwidth_json("a warning first\n" + json.dumps(document))
    assert cases["device_to_device_memcpy_write_ce"]["matrix_gbps"] == [[None, 392.1], [391.9, None]]


@pytest.mark.parametrize("text", ["", "Segmentation fault", '{"other": {}}', '{"nvbandwidth": {"testcases": 3}}'])
def test_what_is_not_nvbandwidth_json_is_refused(text):
    with pytest.raises(ValueError):
        peer_tool_output.parse_nvbandwidth_json(text)


def test_percent_difference():
    assert peer_tool_output.percent_difference(103.0, 100.0) == pytest.approx(3.0)
    assert peer_tool_output.percent_difference(None, 100.0) is None
    assert peer_tool_output.percent_difference(1.0, 0.0) is None


def test_all_reduce_is_compared_only_at_the_same_rank_count():
    collective = _probe("20261130T051342Z-555530", "collective")
    one_gpu = peer_tool_output.parse_all_reduce_perf(_text("all_reduce_perf-h200x1.txt"))
    lines = peer_tools.all_reduce_tables(collective, {"default": one_gpu})
    assert "not compared: nccl-tests ran 1 rank(s), the probe 2" in lines


def test_all_reduce_beside_the_probe_in_place_at_the_same_sizes():
    collective = _probe("20261130T051342Z-555530", "collective")
    curve = [curve for curve in collective["curves"] if curve["name"] == "default"][0]
    tool = {"ranks": 2, "rows": [
        {"size_bytes": 1073741824, "in_place": {"busbw_gbps": 320.0}, "out_of_place": {"busbw_gbps": 318.0}},
        {"size_bytes": 3, "in_place": {"busbw_gbps": 1.0}, "out_of_place": {"busbw_gbps": 1.0}}]}
    rows = peer_tool_output.all_reduce_beside(curve["sweep"], tool)
    assert rows == [{"size_bytes": 1073741824, "probe_busbw_gbps": 326.941, "nccl_tests_in_place_busbw_gbps": 320.0,
                     "nccl_tests_out_of_place_busbw_gbps": 318.0,
                     "difference_pct": pytest.approx((326.941 - 320.0) / 320.0 * 100)}]
    table = "\n".join(peer_tools.all_reduce_tables(collective, {"default": tool}))
    assert "| 1073741824 | 326.9 | 320 | 318 | 2.169 |" in table


def test_p2p_beside_nvbandwidth_per_ordered_pair_and_size():
    p2p = _probe("20261130T070120Z-190457", "p2p")
    write = {"matrix_gbps": [[None, 390.0], [391.0, None]]}
    read = {"matrix_gbps": [[None, 380.0], [381.0, None]]}
    nvbandwidth = {"1024": {"testcases": {"device_to_device_memcpy_write_ce": write,
                                          "device_to_device_memcpy_read_ce": read}}}
    rows = {(row["pair"], row["size_mib"]): row for row in peer_tools.p2p_rows(p2p, nvbandwidth)}
    pair = [pair for pair in p2p["pairs"] if (pair["src"], pair["dst"]) == (0, 1)][0]
    one_way = [point["gbps"] for point in pair["unidirectional"]["sweep"] if point["size_bytes"] == 2 ** 30][0]
    assert rows[("0->1", 1024)]["probe_one_way_gbps"] == one_way
    assert rows[("0->1", 1024)]["nvbandwidth_write_ce_gbps"] == 390.0
    assert rows[("0->1", 1024)]["nvbandwidth_read_ce_gbps"] == 381.0  # read: the destination pulls (row dst, column src)
    assert rows[("1->0", 1024)]["nvbandwidth_write_ce_gbps"] == 391.0
    assert rows[("0->1", 1)]["nvbandwidth_write_ce_gbps"] is None


def test_hostbw_beside_nvbandwidth_at_the_probes_buffer_size():
    summary = {"1024": {"testcases": peer_tool_output.parse_nvbandwidth_json(_text("nvbandwidth-1024MiB-h200x1.json"))}}
    hostbw = {"devices": [{"index": 0, "results": [
        {"direction": "h2d", "host_memory": "pinned", "bytes_per_copy": 2 ** 30, "median_gbps": 55.45},
        {"direction": "h2d", "host_memory": "pageable", "bytes_per_copy": 2 ** 30, "median_gbps": 20.0},
        {"direction": "d2h", "host_memory": "pinned", "bytes_per_copy": 2 ** 30, "median_gbps": 55.327}]}]}
    rows = peer_tools.hostbw_rows(hostbw, summary)
    assert [(row["direction"], row["probe_pinned_gbps"], row["nvbandwidth_ce_gbps"]) for row in rows] == [
        ("h2d", 55.45, 55.1886), ("d2h", 55.327, 54.9292)]
    assert rows[0]["difference_pct"] == pytest.approx((55.45 - 55.1886) / 55.1886 * 100)


def test_what_build_peer_tools_wrote_is_read_back(tmp_path):
    (tmp_path / "built.txt").write_text(
        "nccl-tests built /tmp/peer_tools/nccl-tests (LD_LIBRARY_PATH=/tmp/peer_tools/nccl/lib)\n"
        "nvbandwidth not built: no CUDA toolkit (nvcc) on this machine\n", encoding="utf-8")
    assert peer_tools.built_tools(str(tmp_path)) == {
        "nccl-tests": {"dir": "/tmp/peer_tools/nccl-tests", "library_path": "/tmp/peer_tools/nccl/lib"},
        "nvbandwidth": {"not_built": "no CUDA toolkit (nvcc) on this machine"}}
    assert "No such file" in peer_tools.built_tools(str(tmp_path / "absent"))["nvbandwidth"]["not_built"]
