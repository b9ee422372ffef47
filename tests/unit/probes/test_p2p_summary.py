"""Pure p2p summaries and the matrices, with hand-computed values."""
import pytest

from probe_packages.p2p.matrix import MAX_REASONS, assemble_matrix, run_outcome
from probe_packages.p2p.summary import bidirectional_point, gbps, latency_section, sweep_section, unidirectional_point

GIB = 1 << 30


def test_unidirectional_point_is_the_median_time_per_copy():
    # median 2.75 ms for 1 GiB: 1073741824 / 0.00275 / 1e9 = 390.4515...
    point = unidirectional_point(GIB, [0.0027, 0.0028, 0.00275], True)
    assert point == {"size_bytes": GIB, "gbps": 390.452, "time_per_copy_s": 0.00275, "verified": True}
    assert gbps(10 ** 9, 0.5) == 2.0
    with pytest.raises(ValueError, match="no positive time"):
        gbps(10 ** 9, 0.0)


def test_bidirectional_point_sums_both_directions_per_repeat():
    # repeats (GB/s): 400 + 400 = 800; 384.615 + 400 = 784.615; 416.667 + 333.333 = 750 -> median 784.615
    point = bidirectional_point(10 ** 9, [0.0025, 0.0026, 0.0024], [0.0025, 0.0025, 0.0030], False)
    assert point == {"size_bytes": 10 ** 9, "gbps": 784.615, "time_per_copy_s": 0.0026, "src_to_dst_gbps": 400.0,
                     "dst_to_src_gbps": 400.0, "verified": False}
    with pytest.raises(ValueError, match="one time per repeat"):
        bidirectional_point(10 ** 9, [0.1], [0.1, 0.2], True)


def _points(values):
    return [{"size_bytes": (1 << 20) * 4 ** index, "gbps": value, "time_per_copy_s": 1.0, "verified": True}
            for index, value in enumerate(values)]


def test_headline_is_the_plateau():
    # 390, 395, 393: median 393, farthest 390 (0.76 %) -> within 3 %; 200 is not
    section = sweep_section(_points([10.0, 50.0, 200.0, 390.0, 395.0, 393.0]), True, 3.0, 2)
    assert section["plateau"]["found"] and section["plateau"]["value_gbps"] == 393.0
    assert section["plateau"]["sizes_bytes"] == [(1 << 20) * 4 ** 3, (1 << 20) * 4 ** 4, (1 << 20) * 4 ** 5]
    assert (section["headline_gbps"], section["headline_source"], section["spin_covered_enqueue"]) == (393.0, "plateau", True)


def test_without_a_plateau_the_headline_is_the_largest_size():
    section = sweep_section(_points([10.0, 50.0, 200.0, 390.0]), False, 3.0, 2)
    assert not section["plateau"]["found"] and section["plateau"]["value_gbps"] is None
    assert section["plateau"]["sizes_bytes"] == [] and "still rises" in section["plateau"]["reason"]
    assert (section["headline_gbps"], section["headline_source"]) == (390.0, "largest_size_no_plateau")
    single = sweep_section(_points([55.0]), True, 3.0, 2)
    assert single["headline_gbps"] == 55.0 and not single["plateau"]["found"]
    with pytest.raises(ValueError):
        sweep_section([], True, 3.0, 2)


def test_latency_is_the_median_time_per_copy_in_us():
    section = latency_section(8, 200, [2.1e-6, 2.0e-6, 2.5e-6], True, True)
    assert section == {"size_bytes": 8, "median_us": 2.1, "samples": 3, "copies_per_sample": 200, "verified": True,
                       "spin_covered_enqueue": True}
    with pytest.raises(ValueError):
        latency_section(8, 200, [0.0], True, True)


def _pair(src, dst, uni=None, bidir=None, latency=None, error=None, link="NV18"):
    pair = {"src": src, "dst": dst, "link_class": link}
    for key, value in (("unidirectional", uni), ("bidirectional", bidir)):
        if value is not None:
            pair[key] = {"headline_gbps": value}
    if latency is not None:
        pair["latency"] = {"median_us": latency}
    if error:
        pair["error"] = error
    return pair


def test_matrix_rows_are_sources_and_the_diagonal_is_null():
    pairs = [_pair(0, 1, 390.0, 780.0, 2.5), _pair(1, 0, 391.0, None, 2.6),
             _pair(0, 2, error="peer_access: no peer access", link={"unavailable": "topology unavailable: x"}),
             _pair(2, 0, 50.0, 99.0, 3.0, link="SYS"), _pair(1, 2, 51.0, 98.0, None, error="latency: RuntimeError: boom")]
    matrix = assemble_matrix(3, pairs)
    assert (matrix["gpus"], matrix["rows"], matrix["columns"]) == ([0, 1, 2], "src", "dst")
    uni = matrix["unidirectional_gbps"]
    assert uni[0][0] is None and uni[0][1] == 390.0 and uni[1][0] == 391.0 and uni[2][0] == 50.0
    assert uni[0][2] == {"unavailable": "not measured: peer_access: no peer access"}
    assert uni[2][1] == {"unavailable": "this pair was not run"}
    assert matrix["bidirectional_gbps"][1][0] == {"unavailable": "not measured: bidirectional is turned off in the plan"}
    assert matrix["latency_us"][1][2] == {"unavailable": "not measured: latency: RuntimeError: boom"}
    assert matrix["link_class"][2][0] == "SYS" and matrix["link_class"][0][2] == {"unavailable": "topology unavailable: x"}
    assert assemble_matrix(1, [])["unidirectional_gbps"] == [[None]]


def test_status_and_reason():
    measured, failed = _pair(0, 1, 390.0), _pair(1, 0, error="peer_access: x")
    assert run_outcome([measured], []) == ("ok", "")
    errors = [{"pair": "1->0", "what": "peer_access", "error": "no peer access"}]
    assert run_outcome([measured, failed], errors) == ("partial", "1 pair(s) failed: 1->0 peer_access (no peer access)")
    assert run_outcome([failed], errors)[0] == "error" and run_outcome([], [])[0] == "error"
    many = [{"pair": "0->%d" % index, "what": "latency", "error": "e"} for index in range(1, MAX_REASONS + 3)]
    assert run_outcome([measured], many)[1].startswith("%d pair(s) failed: 0->1 latency (e)" % (MAX_REASONS + 2))
    assert run_outcome([measured], many)[1].endswith("and 2 more (see data.errors)")
