"""probe_packages.collective: sizes, iterations, busbw, the curve summary and the knee, with hand-computed values."""
import pytest

from probe_packages.collective.knee import describe_bytes, first_size_at_least, knee_of_curve
from probe_packages.collective.plan import (expected_sum_factor, fit_max_bytes, iterations_for, iterations_rule, message_sizes,
                                            worker_plan)
from probe_packages.collective.stats import algbw_gbps, bus_factor, busbw_gbps, headline, summarize_curve, sweep_points

GIB = 1 << 30
MIB = 1 << 20


def test_message_sizes_double_from_8_bytes():
    assert message_sizes(64) == [8, 16, 32, 64]
    sizes = message_sizes(GIB)
    assert sizes[0] == 8 and sizes[-1] == GIB and len(sizes) == 28  # 2**3 .. 2**30
    assert all(later == 2 * earlier for earlier, later in zip(sizes, sizes[1:]))
    assert message_sizes(100) == [8, 16, 32, 64, 100]  # the requested largest is measured even off the x2 grid
    with pytest.raises(ValueError):
        message_sizes(6)
    with pytest.raises(ValueError):
        message_sizes(1002)  # not a whole number of float32 elements


def test_iterations_adapt_to_the_time_per_all_reduce():
    # 0.2 s target: 20 us per call -> 10000 -> capped at 1000; 3 ms -> ceil(66.7) = 67; 80 ms -> 2.5 -> at least 5
    assert iterations_for(20e-6, 0.2, 5, 1000) == 1000
    assert iterations_for(3e-3, 0.2, 5, 1000) == 67
    assert iterations_for(80e-3, 0.2, 5, 1000) == 5
    assert iterations_for(0.0, 0.2, 5, 1000) == 1000
    with pytest.raises(ValueError):
        iterations_for(1e-3, 0.2, 10, 5)
    assert "clamped to [5, 1000]" in iterations_rule(0.2, 5, 1000)


def test_expected_sum_and_memory_fit():
    # ranks contribute 1x, 2x, ..., nx the pattern
    assert [expected_sum_factor(n) for n in (2, 4, 8)] == [3, 10, 36]
    # 10 GiB free, half usable = 5 GiB, 4 buffers: 1 GiB fits (4 GiB), 2 GiB would not (8 GiB)
    sizes = message_sizes(2 * GIB)
    assert fit_max_bytes(sizes, 10 * GIB) == GIB
    assert fit_max_bytes(sizes, 100 * GIB) == 2 * GIB
    assert fit_max_bytes(sizes, 16) == 0


def test_worker_plan_holds_what_every_rank_must_agree_on():
    params = {"warmup": 5, "min_iterations": 5, "max_iterations": 1000, "target_time_per_size_s": 0.2}
    plan = worker_plan("gloo", "cpu", 2, [8, 16], params)
    assert plan == {"backend": "gloo", "kind": "cpu", "world_size": 2, "sizes_bytes": [8, 16], "warmup": 5,
                    "min_iterations": 5, "max_iterations": 1000, "target_time_per_size_s": 0.2}


def test_busbw_factor_is_2_n_minus_1_over_n():
    assert bus_factor(2) == 1.0
    assert bus_factor(4) == 1.5
    assert bus_factor(8) == 1.75
    # 10 GB/s algbw -> busbw 10, 15, 17.5
    assert [busbw_gbps(10.0, n) for n in (2, 4, 8)] == [10.0, 15.0, 17.5]
    assert bus_factor(1) == 0.0
    with pytest.raises(ValueError):
        bus_factor(0)


def test_algbw_is_bytes_over_time_over_1e9():
    # 1 GiB in 10 ms: 1073741824 / 0.01 / 1e9 = 107.3741824 GB/s
    assert algbw_gbps(GIB, 0.01) == pytest.approx(107.3741824)
    with pytest.raises(ValueError):
        algbw_gbps(GIB, 0.0)


def test_sweep_points_round_to_six_digits():
    (point,) = sweep_points([{"size_bytes": GIB, "time_s": 0.01, "iterations": 20, "verified": True}], 4)
    # algbw 107.3741824 -> 107.374; busbw x 1.5 = 161.0612736 -> 161.061; 10 ms = 10000 us
    assert point == {"size_bytes": GIB, "time_us": 10000.0, "algbw_gbps": 107.374, "busbw_gbps": 161.061,
                     "iterations": 20, "verified": True}


def synthetic(startup_s, bandwidth_bps, sizes, verified=True):
    """t(s) = startup + s / bandwidth, the model the knee assumes."""
    return [{"size_bytes": size, "time_s": startup_s + size / bandwidth_bps, "iterations": 10, "verified": verified}
            for size in sizes]


def test_knee_of_a_synthetic_curve_is_startup_times_bandwidth():
    # a = 20 us, b = 100 GB/s: the knee is a x b = 2e6 bytes, where algbw = b / 2 = 50 GB/s
    sizes = message_sizes(GIB)
    raw = synthetic(20e-6, 100e9, sizes)
    times = [point["time_s"] for point in raw]
    algbw = [algbw_gbps(point["size_bytes"], point["time_s"]) for point in raw]
    knee = knee_of_curve(sizes, times, algbw, tolerance_pct=5.0, min_points=3, min_size=GIB / 64)
    assert knee["knee_bytes"] == pytest.approx(2e6, rel=0.05)
    assert knee["startup_us"] == pytest.approx(20.0, rel=1e-4)  # median of 8..64 B: 20 us + 24 B / 100 GB/s
    assert knee["plateau_algbw_gbps"] == pytest.approx(100.0, rel=0.05)
    # 2 MiB: 2097152 / (20 us + 20.97 us) = 51.2 GB/s >= half; 1 MiB: 1048576 / 30.49 us = 34.4 GB/s is not
    assert knee["first_size_at_half_plateau_bytes"] == 2 * MIB
    assert "4 smallest sizes (8 B-64 B)" in knee["method"] and "plateau at" in knee["method"]


@pytest.mark.parametrize("startup_s,bandwidth_bps", [(5e-6, 400e9), (50e-6, 20e9), (1e-3, 1e9)])
def test_knee_tracks_other_synthetic_curves(startup_s, bandwidth_bps):
    sizes = message_sizes(GIB)
    raw = synthetic(startup_s, bandwidth_bps, sizes)
    knee = knee_of_curve(sizes, [p["time_s"] for p in raw], [algbw_gbps(p["size_bytes"], p["time_s"]) for p in raw],
                         min_size=GIB / 64)
    assert knee["knee_bytes"] == pytest.approx(startup_s * bandwidth_bps, rel=0.05)


def test_knee_without_a_plateau_uses_the_largest_algbw_and_says_so():
    # up to 64 KiB only: algbw still doubles, so no plateau; the largest algbw is at 64 KiB
    sizes = message_sizes(64 * 1024)
    raw = synthetic(20e-6, 100e9, sizes)
    algbw = [algbw_gbps(p["size_bytes"], p["time_s"]) for p in raw]
    knee = knee_of_curve(sizes, [p["time_s"] for p in raw], algbw)
    assert knee["plateau_algbw_gbps"] == pytest.approx(algbw[-1], rel=1e-5)
    assert "no plateau" in knee["method"] and "64 KiB" in knee["method"]
    with pytest.raises(ValueError):
        knee_of_curve([8, 16, 32], [1.0, 1.0, 1.0], [1.0, 2.0, 3.0])


def test_first_size_at_least_and_describe_bytes():
    assert first_size_at_least([8, 16, 32], [1.0, 5.0, 9.0], 5.0) == 16
    assert first_size_at_least([8, 16], [1.0, 2.0], 5.0) is None
    assert [describe_bytes(size) for size in (8, 1024, 3 * MIB, GIB, 1500)] == ["8 B", "1 KiB", "3 MiB", "1 GiB", "1.46 KiB"]


def test_summary_of_a_curve_with_a_plateau():
    sizes = message_sizes(GIB)
    summary = summarize_curve(synthetic(20e-6, 100e9, sizes), 2)
    assert [point["size_bytes"] for point in summary["sweep"]] == sizes
    assert summary["largest_bytes"] == GIB
    # busbw = algbw for 2 ranks; at 1 GiB: 1073741824 / (20 us + 10.737 ms) = 99.81 GB/s, also the peak
    assert summary["busbw_at_largest_gbps"] == pytest.approx(99.814, rel=1e-4)
    assert summary["peak_busbw_gbps"] == summary["busbw_at_largest_gbps"]
    plateau = summary["plateau"]
    assert plateau["found"] and plateau["sizes_bytes"][-1] == GIB and plateau["busbw_gbps"] == pytest.approx(98, rel=0.03)
    assert set(summary["knee"]) == {"knee_bytes", "startup_us", "plateau_algbw_gbps", "first_size_at_half_plateau_bytes", "method"}
    assert headline(summary) == {"gbps": plateau["busbw_gbps"], "source": "plateau", "sizes_bytes": plateau["sizes_bytes"]}


def test_summary_with_eight_ranks_scales_busbw_and_handles_short_sweeps():
    summary = summarize_curve(synthetic(20e-6, 100e9, [GIB]), 8)
    assert summary["busbw_at_largest_gbps"] == pytest.approx(99.814 * 1.75, rel=1e-4)
    assert summary["knee"] == {"unavailable": "1 measured size(s): the knee needs at least 6 (4 for the startup time, 2 more "
                                              "for the bandwidth)"}
    assert summary["plateau"]["found"] is False
    assert headline(summary)["source"] == "largest_size"
    assert summarize_curve([], 2) == {"sweep": []}
