"""The load probe's pure logic on recorded (hand-written) sample rows, each expected value computed by hand."""
import pytest

from probe_packages.load import summary
from probe_packages.load.cooldown import summarize as summarize_cooldown
from probe_packages.load.processes import NAMESPACE_NOTE, aggregate, own_pids
from probe_packages.load.rates import achieved, rate_after, series
from probe_packages.load.stats import spread
from probelib.measure.sampler_timing import jitter

PLAN = {"warmup_s": 1.0, "clock_rise_mhz": 100.0, "power_margin_pct": 2.0}
# t_s, sm_clock_mhz, mem_clock_mhz, power_w, temperature_c, clock_event_reasons_mask, gpu_util_pct
ROWS = [
    [0.0, 345, 1593, 80.0, 30, 0x1, 0],      # gpu_idle: the load has just been released
    [0.5, 1500, 2619, 400.0, 35, 0x0, 100],
    [1.0, 1980, 2619, 690.0, 40, 0x0, 100],  # the active window starts here (warmup_s 1.0)
    [1.5, 1755, 2619, 720.0, 45, 0x4, 100],  # sw_power_cap
    [2.0, 1700, 2619, 705.0, 50, 0x24, 100],  # sw_power_cap + sw_thermal_slowdown
    [2.5, 1800, 2619, 700.0, 52, 0x4, 100],
    [3.0, 1830, 2619, None, 53, 0x4, 100],   # the power read failed
    [3.5, 600, 1593, 150.0, 50, 0x1, 0],     # after this GPU's load ended (3.0): left out
]
BEFORE = {"sm_clock_mhz": 345, "mem_clock_mhz": 1593, "power_w": 75.0, "temperature_c": 29, "gpu_util_pct": 0,
          "max_sm_clock_mhz": 1980, "power_limit_w": 700.0}
AFTER = {"sm_clock_mhz": 345, "mem_clock_mhz": 1593, "power_w": 90.0, "temperature_c": 38, "gpu_util_pct": 0}


@pytest.fixture(name="result")
def fixture_result():
    return summary.summarize_gpu(ROWS, BEFORE, AFTER, 3.0, PLAN)


def test_active_window_statistics(result):
    active = result["active"]
    assert active["window_s"] == [1.0, 3.0] and active["samples"] == 5
    # sm: 1700 1755 1800 1830 1980
    assert active["sm_clock_mhz"] == {"median": 1800, "max": 1980, "min": 1700, "samples": 5}
    assert active["mem_clock_mhz"] == {"median": 2619, "max": 2619, "min": 2619, "samples": 5}
    # power: 690 700 705 720 (the failed read left out): median (700 + 705) / 2
    assert active["power_w"] == {"median": 702.5, "max": 720.0, "min": 690.0, "samples": 4}
    assert active["temperature_c"] == {"median": 50, "max": 53, "min": 40, "samples": 5}
    assert active["gpu_util_pct"]["median"] == 100


def test_differences_idle_to_active_and_after(result):
    assert result["differences"]["active_minus_idle"] == {
        "sm_clock_mhz": 1455.0, "mem_clock_mhz": 1026.0, "power_w": 627.5, "temperature_c": 21.0, "gpu_util_pct": 100.0}
    assert result["differences"]["after_minus_before"] == {
        "sm_clock_mhz": 0.0, "mem_clock_mhz": 0.0, "power_w": 15.0, "temperature_c": 9.0, "gpu_util_pct": 0.0}


def test_clocks_rose(result):
    clocks = result["clocks"]
    assert clocks["rose"] is True and clocks["basis"] == "rose"
    assert clocks["active_fraction_of_max"] == 0.9091  # 1800 / 1980
    assert "1455 MHz above the idle 345 MHz" in clocks["note"]


def test_clocks_other_bases():
    at_max = summary.clocks_rose(1980, {"median": 1755}, 1980, 100.0)
    assert (at_max["rose"], at_max["basis"]) == (True, "idle_at_max")
    assert "already within 100 MHz of the maximum 1980 MHz" in at_max["note"]
    flat = summary.clocks_rose(1000, {"median": 1050}, 1980, 100.0)
    assert (flat["rose"], flat["basis"]) == (False, "did_not_rise")
    unknown = summary.clocks_rose({"unavailable": "x"}, {"median": 1050}, 1980, 100.0)
    assert (unknown["rose"], unknown["basis"], unknown["idle_sm_clock_mhz"]) == (None, "unknown", None)
    no_active = summary.clocks_rose(345, {"unavailable": "no sample"}, 1980, 100.0)
    assert no_active["basis"] == "unknown" and no_active["active_fraction_of_max"] is None


def test_throttle_reasons(result):
    throttle = result["throttle"]
    assert throttle["samples_load"] == 7 and throttle["samples_active"] == 5
    assert throttle["reasons"] == {
        "gpu_idle": {"fraction_active": 0.0, "samples_load": 1, "first_seen_s": 0.0},
        "sw_power_cap": {"fraction_active": 0.8, "samples_load": 4, "first_seen_s": 1.5},
        "sw_thermal_slowdown": {"fraction_active": 0.2, "samples_load": 1, "first_seen_s": 2.0},
    }
    assert throttle["hardware_slowdown"] is False and throttle["thermal"] is True
    assert throttle["slowdown_reasons_seen"] == ["sw_thermal_slowdown"] and throttle["first_slowdown_s"] == 2.0
    assert throttle["sw_power_cap_fraction"] == 0.8


def test_hardware_slowdown_during_warmup_still_counts():
    rows = [[0.0, 1200, 2619, 500.0, 60, 0x8, 100],   # hw_slowdown before the active window
            [1.0, 1900, 2619, 650.0, 60, 0x0, 100],
            [2.0, 1900, 2619, 650.0, 60, 0x80, 100],  # hw_power_brake_slowdown
            [3.0, 1900, 2619, 650.0, 60, None, 100]]  # the reasons read failed: not counted
    throttle = summary.throttle(summary.window(rows, 0.0, None), summary.window(rows, 1.0, None))
    assert throttle["hardware_slowdown"] is True and throttle["thermal"] is False
    assert throttle["samples_load"] == 3 and throttle["samples_active"] == 2
    assert throttle["reasons"]["hw_slowdown"] == {"fraction_active": 0.0, "samples_load": 1, "first_seen_s": 0.0}
    assert throttle["reasons"]["hw_power_brake_slowdown"]["fraction_active"] == 0.5
    assert throttle["slowdown_reasons_seen"] == ["hw_power_brake_slowdown", "hw_slowdown"] and throttle["first_slowdown_s"] == 0.0
    assert throttle["sw_power_cap_fraction"] == 0.0


def test_power_against_the_limit(result):
    power = result["power"]
    # threshold 700 x 1.02 = 714: only 720 of 690 700 705 720 is above it
    assert power == {"limit_w": 700.0, "margin_pct": 2.0, "median_w": 702.5, "max_w": 720.0, "max_w_load": 720.0,
                     "samples_active": 4, "threshold_w": 714.0, "fraction_over_limit": 0.25,
                     "median_fraction_of_limit": 1.0036}
    unknown_limit = summary.power(ROWS, ROWS, {"unavailable": "not supported"}, 2.0)
    assert unknown_limit["limit_w"] == {"unavailable": "not supported"} and unknown_limit["fraction_over_limit"] is None


def test_a_gpu_whose_load_ended_before_the_warmup_has_no_active_window():
    result = summary.summarize_gpu(ROWS, BEFORE, AFTER, 0.5, PLAN)
    assert result["active"]["samples"] == 0 and "unavailable" in result["active"]["sm_clock_mhz"]
    assert "unavailable" in result["differences"]["active_minus_idle"]["sm_clock_mhz"]
    assert result["clocks"]["basis"] == "unknown"
    assert result["throttle"]["samples_load"] == 2 and result["throttle"]["sw_power_cap_fraction"] is None


def test_spread_and_jitter_bookkeeping():
    assert spread([3, None, 1, 2]) == {"median": 2.0, "max": 3.0, "min": 1.0, "samples": 3}
    assert "unavailable" in spread([None])
    # intervals 0.5 0.51 0.49 1.0 (the tick at 2.0 was missed): median (0.5 + 0.51) / 2, mean 2.5 / 4
    timing = jitter([0.0, 0.5, 1.01, 1.5, 2.5], [0.0, 0.0, 0.01, 0.0, 0.0], [0.002, 0.004, 0.003, 0.5, 0.001], 0.5, 1)
    assert timing["rounds"] == 5 and timing["missed_ticks"] == 1 and timing["scheduled_interval_s"] == 0.5
    assert timing["interval_s_actual"] == {"median": 0.505, "max": 1.0, "min": 0.49, "mean": 0.625, "count": 4}
    assert timing["lateness_s"]["max"] == 0.01 and timing["read_duration_s"]["median"] == 0.003
    assert timing["max_deviation_pct"] == 100.0
    assert "unavailable" in jitter([0.0], [0.0], [0.001], 0.5, 0)["interval_s_actual"]


def test_rates_from_checkpoints():
    # 8 products a checkpoint, 1e12 flop a product, checkpoints at 10 20 40 50 ms of GPU time
    assert achieved(32, 50.0, 10 ** 12) == 640.0  # 32e12 / 0.05 s
    assert rate_after([10.0, 20.0, 40.0, 50.0], 8, 10 ** 12, 15.0) == 533.33  # 16 products in 30 ms
    assert "unavailable" in rate_after([10.0, 20.0], 8, 10 ** 12, 15.0)
    # buckets of 20 ms: [0, 20] 2 checkpoints, [20, 40] 1, [40, 50] 1 (the last, shorter one)
    assert series([10.0, 20.0, 40.0, 50.0], 8, 10 ** 12, 0.1, bucket_s=0.02) == [[0.12, 800.0], [0.14, 400.0], [0.15, 800.0]]
    assert "unavailable" in achieved(0, 0.0, 10 ** 12)


def test_processes_seen_and_unexpected():
    gone = {"unavailable": "pid 555 is not visible here"}
    observations = [
        (0.0, "GPU-a", [{"pid": 100, "name": "python3", "kind": "compute", "used_memory_mib": 512.0, "own": True}]),
        (0.0, "GPU-b", [{"pid": 100, "name": "python3", "kind": "compute", "used_memory_mib": 512.0, "own": True},
                        {"pid": 555, "name": gone, "kind": "compute", "used_memory_mib": 1024.0, "own": False}]),
        (5.0, "GPU-a", [{"pid": 555, "name": gone, "kind": "compute", "used_memory_mib": 1024.0, "own": False}]),
        (5.0, "GPU-b", {"unavailable": "not permitted for this user"}),
    ]
    result = aggregate(observations, [100])
    assert result["rounds"] == 2 and result["own_listed"] is True and result["note"] == ""
    assert result["unreadable"] == {"GPU-b": "not permitted for this user"}
    assert [(record["pid"], record["gpus"], record["first_seen_s"], record["last_seen_s"], record["observations"], record["own"])
            for record in result["seen"]] == [(100, ["GPU-a", "GPU-b"], 0.0, 0.0, 2, True),
                                              (555, ["GPU-b", "GPU-a"], 0.0, 5.0, 2, False)]
    assert result["unexpected"] == [{"pid": 555, "name": gone, "gpus": ["GPU-b", "GPU-a"], "first_seen_s": 0.0}]


def test_processes_from_another_pid_namespace_are_flagged():
    observations = [(0.0, "GPU-a", [{"pid": 4242, "name": {"unavailable": "x"}, "kind": "compute",
                                     "used_memory_mib": 1.0, "own": False}])]
    result = aggregate(observations, [100])
    assert result["own_listed"] is False and result["note"] == NAMESPACE_NOTE and len(result["unexpected"]) == 1
    assert aggregate([], [100])["note"] == ""


def test_own_pids_include_the_namespace_pids(tmp_path):
    (tmp_path / "self").mkdir()
    (tmp_path / "self" / "status").write_text("Name:\tpython3\nNSpid:\t4242\t7\n")
    import os  # pylint: disable=import-outside-toplevel
    assert own_pids(str(tmp_path)) == sorted({os.getpid(), 4242, 7})
    assert own_pids(str(tmp_path / "missing")) == [os.getpid()]


def test_cooldown_temperature_drop():
    rows = [[0.0, 345, 1593, 120.0, 60, 0x1, 0], [1.0, 345, 1593, 100.0, 55, 0x1, 0], [2.0, 345, 1593, 90.0, 50, 0x1, 0]]
    assert summarize_cooldown(rows, 30) == {
        "start_temperature_c": 60, "end_temperature_c": 50, "drop_c": 10, "idle_before_temperature_c": 30,
        "end_above_idle_before_c": 20, "rows": [[0.0, 60, 120.0], [1.0, 55, 100.0], [2.0, 50, 90.0]]}
    empty = summarize_cooldown([], {"unavailable": "x"})
    assert empty["drop_c"] is None and empty["idle_before_temperature_c"] is None
