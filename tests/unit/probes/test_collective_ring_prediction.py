"""The ring all-reduce prediction (probe_packages/collective/ring_prediction.py), pure."""
import pytest

from probe_packages.collective import ring_prediction as ring
from probelib.fields import is_unavailable

GIB = 1 << 30
NV18 = {"source": "nvml", "link_classes": ["NV18"],
        "pairs": [{"gpu_a": a, "gpu_b": b, "link_class": "NV18", "nvlink_via": "nvswitch"} for a in range(8) for b in range(a + 1, 8)]}
H200 = {index: {"nvlink_version": "4.0", "pcie_max_gen": 5, "pcie_max_width": 16} for index in range(8)}


def test_traffic_factors_relative_to_two_ranks():
    assert [ring.traffic_ratio(n) for n in (2, 4, 8)] == [1.0, 1.5, 1.75]


def test_per_rank_bytes_is_two_n_minus_one_over_n_of_the_message():
    assert [ring.per_rank_bytes(n, GIB) for n in (2, 4, 8)] == [GIB, 1.5 * GIB, 1.75 * GIB]


def test_predicted_time_from_a_link_rate():
    assert ring.predicted_time_us(450e9, 450.0) == pytest.approx(1e6)
    assert ring.predicted_time_us(GIB, 450.0) == pytest.approx(2386.09, rel=1e-5)


def test_nvswitch_host_predicts_time_and_busbw_from_nvlink_count_and_version():
    prediction = ring.predict(GIB, "cuda", 8, NV18, H200)
    assert prediction["stated"].startswith("stated before the measurement")
    two, four, eight = prediction["world_sizes"]
    assert [entry["measurable"] for entry in (two, four, eight)] == [True, True, True]
    assert two["link_rate_gbps"] == 450 and "18 NVLink 4.0 links x 25 GB/s" in two["link_how"]
    assert eight["predicted_busbw_gbps"] == 450
    assert four["predicted_time_us"] == pytest.approx(1.5 * GIB / 450e9 * 1e6, rel=1e-5)


def test_the_slowest_ring_link_sets_the_rate():
    topology = {"pairs": [{"gpu_a": 0, "gpu_b": 1, "link_class": "NV4"}, {"gpu_a": 1, "gpu_b": 2, "link_class": "NV4"},
                          {"gpu_a": 2, "gpu_b": 3, "link_class": "NV4"}, {"gpu_a": 0, "gpu_b": 3, "link_class": "SYS"}]}
    link = ring.ring_link(4, topology, H200)
    assert link["link_class"] == "SYS" and link["rate_gbps"] == 63.015 and "GPU 0-3" in link["how"]
    assert ring.ring_link(2, topology, H200)["rate_gbps"] == 100


def test_an_unknown_rate_is_never_invented():
    prediction = ring.predict(GIB, "cuda", 2, NV18, {0: {"nvlink_version": "9.9"}, 1: {"nvlink_version": "9.9"}})
    two = prediction["world_sizes"][0]
    assert is_unavailable(two["link_rate_gbps"]) and "no per-link rate is known for NVLink 9.9" in two["link_rate_gbps"]["unavailable"]
    assert is_unavailable(two["predicted_time_us"]) and two["traffic_ratio_to_2"] == 1.0


def test_world_sizes_this_host_cannot_run_are_unavailable_but_predicted():
    prediction = ring.predict(GIB, "cuda", 1, {"unavailable": "1 GPU visible"}, {"unavailable": "1 GPU visible"})
    reasons = [entry["measurable"]["unavailable"] for entry in prediction["world_sizes"]]
    assert reasons == ["needs 2 GPUs, this host has 1", "needs 4 GPUs, this host has 1", "needs 8 GPUs, this host has 1"]
    assert [entry["per_rank_bytes"] for entry in prediction["world_sizes"]] == [GIB, 3 * GIB // 2, 7 * GIB // 4]
    assert all(is_unavailable(entry["predicted_busbw_gbps"]) for entry in prediction["world_sizes"])
    four = ring.predict(GIB, "cpu", 2, {"unavailable": "no GPU"}, {"unavailable": "no GPU"})["world_sizes"][1]
    assert four["measurable"]["unavailable"] == "needs 4 CPU ranks, cpu_ranks is 2"
    assert "no link rate to predict from" in four["predicted_time_us"]["unavailable"]


def test_sub_world_sizes_and_ring_sizes():
    assert ring.sub_world_sizes(8) == [2, 4] and ring.sub_world_sizes(4) == [2] and ring.sub_world_sizes(2) == []
    assert ring.ring_sizes_bytes([8, 16, 32, 64, 128]) == [32, 64, 128]


def point(busbw, time_us, source="plateau"):
    return {"curve": "default", "time_us": time_us, "busbw_gbps": busbw, "busbw_source": source}


def test_gap_within_fifteen_percent_says_so():
    entry = ring.predict(GIB, "cuda", 2, NV18, H200)["world_sizes"][0]
    result = ring.compare(entry, point(420.0, 2556.0))
    assert result["busbw_diff_pct"] == -6.7 and result["time_diff_pct"] == pytest.approx(7.1, abs=0.1)
    assert result["sentence"].endswith("within 15 % of the ring model")


def test_gap_sentences_name_the_reason():
    nvlink = ring.predict(GIB, "cuda", 2, NV18, H200)["world_sizes"][0]
    assert "does not reach NVLink's raw rate" in ring.compare(nvlink, point(314.2, 3417.0))["sentence"]
    assert "launch-bound" in ring.compare(nvlink, point(200.0, 5000.0, "largest_size"))["sentence"]
    assert "NVLS or a tree" in ring.compare(nvlink, point(600.0, 1800.0))["sentence"]
    sys_pairs = [{"gpu_a": a, "gpu_b": b, "link_class": "SYS"} for a in range(4) for b in range(a + 1, 4)]
    sys_ring = ring.predict(GIB, "cuda", 4, {"pairs": sys_pairs}, H200)["world_sizes"][1]
    assert "the 4-rank ring crosses a PCIe SYS link" in ring.compare(sys_ring, point(20.0, 80000.0))["sentence"]


def test_without_a_rate_the_time_growth_is_compared_with_the_traffic():
    prediction = ring.predict(1 << 20, "cpu", 4, {"unavailable": "no GPU"}, {"unavailable": "no GPU"})
    results = ring.comparisons(prediction, {2: point(0.5, 1000.0), 4: point(0.5, 1500.0)})
    assert "measured_time_ratio_to_2" not in results[0] and results[1]["measured_time_ratio_to_2"] == 1.5
    assert "grew 1.50 x from 2 ranks against the 1.50 x more traffic" in results[1]["sentence"]
    assert results[2]["measured"]["unavailable"] == "needs 8 CPU ranks, cpu_ranks is 4"


def test_measured_point_takes_the_largest_message_and_the_headline():
    curve = {"name": "ring_2", "sweep": [{"size_bytes": GIB, "time_us": 3000.0}], "busbw_at_largest_gbps": 357.9,
             "largest_bytes": GIB, "plateau": {"found": False}}
    assert ring.measured_point(curve, GIB) == {"curve": "ring_2", "time_us": 3000.0, "busbw_gbps": 357.9,
                                               "busbw_source": "largest_size"}
    assert "did not reach" in ring.measured_point(curve, 2 * GIB)["unavailable"]
    assert ring.measured_point({"name": "ring_2", "sweep": [], "error": "boom"}, GIB)["unavailable"] == "the curve failed: boom"
