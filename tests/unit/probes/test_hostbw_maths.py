"""hostbw pure logic: GB/s, median and CV, the PCIe link's raw rate, plan choice, buffer sizing, sample indices."""
import pytest

from probe_packages.hostbw.copies import sample_indices
from probe_packages.hostbw.pcie import percent_of_link
from probe_packages.hostbw.plan import make_plan, validate_params
from probe_packages.hostbw.sizing import MIB, choose_buffer
from probe_packages.hostbw.stats import gbps, summarize
from probelib.sweep import cv_pct
from probelib.system.pcie_rate import link_raw_gbps

PARAMS = {"device": "auto", "quick": False, "buffer_mib": 1024, "cpu_buffer_mib": 64, "iterations": 20, "repeats": 3,
          "warmup": 3, "pageable": True, "bidirectional": True, "numa_pin": True, "check_elements": 4096,
          "alone_devices": "first", "workers_per_gpu": 1}


def test_gbps_counts_each_byte_once_with_gb_1e9():
    # 1 GiB in 19.5 ms: 1073741824 / 0.0195 / 1e9 = 55.063...
    assert gbps(2 ** 30, 0.0195) == pytest.approx(55.0637, abs=1e-4)
    assert gbps(10 ** 9, 1.0) == 1.0
    with pytest.raises(ValueError):
        gbps(1, 0.0)


def test_cv_is_sample_stdev_over_mean():
    # mean 50, sample stdev of (40, 50, 60) = 10 -> 20 %
    assert cv_pct([40.0, 50.0, 60.0]) == pytest.approx(20.0)
    assert cv_pct([55.0]) is None
    assert cv_pct([]) is None


def test_one_repeat_has_no_spread():
    # one repeat cannot have a spread: unavailable as membw writes it, not a made-up 0 %
    summary = summarize(10 ** 9, [0.02])
    assert summary["repeats_gbps"] == [50.0] and summary["median_gbps"] == 50.0
    assert summary["cv_pct"] == {"unavailable": "a coefficient of variation needs at least 2 repeats"}


def test_summarize_takes_the_median_of_the_repeats():
    # 1e9 bytes in 0.02, 0.025, 0.04 s -> 50, 40, 25 GB/s; median 40; mean 38.33, stdev 12.58 -> 32.83 %
    summary = summarize(10 ** 9, [0.02, 0.025, 0.04])
    assert summary["repeats_gbps"] == [50.0, 40.0, 25.0]
    assert summary["median_gbps"] == 40.0
    assert summary["cv_pct"] == pytest.approx(32.83, abs=0.01)
    with pytest.raises(ValueError):
        summarize(1, [])


def test_link_raw_rate_per_direction():
    # gen 5: 32 GT/s x 16 lanes x 128/130 / 8 bits = 63.015 GB/s
    assert link_raw_gbps(5, 16) == 63.015
    # gen 4 x16: 31.508; gen 3 x8: 7.877; gen 1 x1: 2.5 x 0.8 / 8 = 0.25
    assert link_raw_gbps(4, 16) == 31.508
    assert link_raw_gbps(3, 8) == 7.877
    assert link_raw_gbps(1, 1) == 0.25
    assert "unavailable" in link_raw_gbps({"unavailable": "no NVML"}, 16)
    assert "unavailable" in link_raw_gbps(9, 16)
    assert "unavailable" in link_raw_gbps(5, 0)


def test_percent_of_link_compares_bidirectional_with_both_directions():
    assert percent_of_link({"direction": "h2d", "median_gbps": 55.4}, 63.015) == 87.9
    assert percent_of_link({"direction": "bidirectional", "median_gbps": 100.0}, 63.015) == 79.3
    assert "unavailable" in percent_of_link({"direction": "d2h", "median_gbps": 1.0}, {"unavailable": "x"})
    assert "unavailable" in percent_of_link({"direction": "d2h", "median_gbps": 1.0}, 0)


def test_plans():
    full = make_plan("cuda", PARAMS)
    assert (full["name"], full["buffer_mib_requested"], full["iterations"], full["bidirectional"]) == ("gpu_full", 1024, 20, True)
    assert full["host_memory"] == ["pinned", "pageable"]
    quick = make_plan("cuda", dict(PARAMS, quick=True))
    assert (quick["name"], quick["buffer_mib_requested"], quick["host_memory"], quick["bidirectional"]) == (
        "gpu_quick", 256, ["pinned"], False)
    assert quick["iterations"] < full["iterations"]
    no_extras = make_plan("cuda", dict(PARAMS, pageable=False, bidirectional=False))
    assert no_extras["host_memory"] == ["pinned"] and not no_extras["bidirectional"]
    cpu = make_plan("cpu", PARAMS)
    assert (cpu["name"], cpu["buffer_mib_requested"], cpu["directions"], cpu["bidirectional"]) == ("cpu", 64, ["h2h"], False)
    assert make_plan("cpu", dict(PARAMS, quick=True))["name"] == "cpu_quick"


def test_parameters_are_checked():
    validate_params(PARAMS)
    for key, value in (("device", "gpu"), ("buffer_mib", 0), ("iterations", 2.5), ("warmup", -1), ("check_elements", 0)):
        with pytest.raises(ValueError):
            validate_params(dict(PARAMS, **{key: value}))


def test_buffer_is_bounded_by_host_and_device_memory():
    plenty = 10 ** 12
    assert choose_buffer(1024, plenty, 2, plenty, 2) == {"requested_mib": 1024, "used_mib": 1024, "bytes": 2 ** 30,
                                                         "limited_by": "request"}
    # 2 GiB available, half of it for 2 host buffers -> 512 MiB each
    assert choose_buffer(1024, 2 * 2 ** 30, 2, plenty, 2)["used_mib"] == 512
    assert choose_buffer(1024, 2 * 2 ** 30, 2, plenty, 2)["limited_by"] == "host_memory"
    # 1000 MiB free on the GPU, 80 % for 2 buffers -> 400 MiB
    limited = choose_buffer(1024, plenty, 1, 1000 * MIB, 2)
    assert (limited["used_mib"], limited["limited_by"], limited["bytes"]) == (400, "device_memory", 400 * MIB)
    assert choose_buffer(64, plenty, 2)["used_mib"] == 64
    with pytest.raises(ValueError):
        choose_buffer(64, MIB, 2)


def test_sample_indices_cover_both_ends():
    assert sample_indices(11, 3) == [0, 5, 10]
    assert sample_indices(4, 10) == [0, 1, 2, 3]
    assert sample_indices(100, 1) == [0]
    indices = sample_indices(2 ** 28, 4096)
    assert len(indices) == 4096 and indices[0] == 0 and indices[-1] == 2 ** 28 - 1
    with pytest.raises(ValueError):
        sample_indices(0, 1)
