"""probelib.sweep: median, coefficient of variation, the plateau rule and the regime labels, with hand-computed values."""

import pytest

from probelib.sweep import BELOW_PLATEAU, cv_pct, find_plateau, max_deviation_pct, median, regimes, significant


def test_median_odd_even():
    assert median([3.0, 1.0, 2.0]) == 2.0
    assert median([4.0, 1.0, 3.0, 2.0]) == 2.5
    with pytest.raises(ValueError):
        median([])


def test_cv_pct_sample_standard_deviation():
    # mean 100, deviations -10, 0, +10: sample variance (100 + 0 + 100) / 2 = 100, sd 10, cv 10 %
    assert cv_pct([90.0, 100.0, 110.0]) == pytest.approx(10.0)
    # 4000, 4100: mean 4050, sd = sqrt(2 * 50^2 / 1) = 70.71, cv = 1.746 %
    assert cv_pct([4000.0, 4100.0]) == pytest.approx(70.7106781 / 4050 * 100)
    assert cv_pct([5.0]) is None
    assert cv_pct([0.0, 0.0]) is None


def test_max_deviation_pct():
    # median 100; farthest 97 -> 3 %
    assert max_deviation_pct([97.0, 100.0, 101.0]) == pytest.approx(3.0)


def test_plateau_of_a_flat_tail_after_a_rise():
    sizes = [4, 16, 64, 256, 1024, 4096]
    values = [900.0, 2500.0, 3900.0, 4250.0, 4300.0, 4310.0]
    plateau = find_plateau(sizes, values, tolerance_pct=3.0, min_points=2)
    # 3900 vs median 4275 of the last four is 8.8 % off; the last three are within 1.4 % of 4300
    assert plateau["found"] is True
    assert plateau["sizes"] == [256, 1024, 4096]
    assert plateau["indices"] == [3, 4, 5]
    assert plateau["value"] == 4300.0
    assert plateau["max_deviation_pct"] == pytest.approx(50 / 4300 * 100)
    assert plateau["includes_largest"] is True
    assert regimes(sizes, plateau) == [BELOW_PLATEAU] * 3 + ["plateau"] * 3


def test_plateau_is_not_the_maximum():
    # the 16 MiB point (in cache) is the maximum; the plateau is at the large sizes
    sizes = [4, 16, 64, 256, 1024]
    values = [2000.0, 6000.0, 4000.0, 4100.0, 4050.0]
    plateau = find_plateau(sizes, values, 3.0, 2)
    assert plateau["sizes"] == [64, 256, 1024]
    assert plateau["value"] == 4050.0


def test_monotonic_rise_has_no_plateau():
    sizes = [1, 2, 4, 8]
    plateau = find_plateau(sizes, [100.0, 200.0, 400.0, 800.0], 3.0, 2)
    assert plateau["found"] is False
    assert plateau["value"] is None and plateau["sizes"] == []
    assert "still rises" in plateau["reason"]
    assert regimes(sizes, plateau) == ["no plateau"] * 4


def test_a_slow_rise_within_the_tolerance_step_by_step_is_still_called_a_rise():
    # the all-reduce curve on the H200 rig: each step < 5 %, three points together > 5 %
    plateau = find_plateau([1, 2, 3, 4], [286.8, 299.6, 316.3, 327.4], 5.0, 3)
    assert plateau["found"] is False
    assert "still rises at the largest sizes (by 9.3 % over the last 3)" in plateau["reason"]


def test_noisy_values_have_no_plateau():
    plateau = find_plateau([1, 2, 3, 4], [100.0, 120.0, 100.0, 120.0], 3.0, 2)
    assert plateau["found"] is False
    assert "noisy" in plateau["reason"]


def test_min_size_excludes_cached_points():
    # 4 and 16 agree with each other (cache), but they are below min_size; 64 alone cannot be a plateau
    plateau = find_plateau([4, 16, 64], [5000.0, 5010.0, 4000.0], 3.0, 2, min_size=50)
    assert plateau["found"] is False
    assert "only 1 measured size" in plateau["reason"]
    assert regimes([4, 16, 64], plateau, min_size=50) == [BELOW_PLATEAU, BELOW_PLATEAU, "no plateau"]


def test_ties_go_to_the_larger_sizes_and_drop_is_beyond():
    # two runs of two: (64, 256) at 4000 and (1024, 4096) at 3000; the larger sizes win
    sizes = [64, 256, 1024, 4096]
    plateau = find_plateau(sizes, [4000.0, 4010.0, 3000.0, 3010.0], 3.0, 2)
    assert plateau["sizes"] == [1024, 4096]
    # a drop at the largest size: the plateau stops before it and the largest is labelled beyond
    plateau = find_plateau(sizes, [4000.0, 4300.0, 4310.0, 3500.0], 3.0, 2)
    assert plateau["sizes"] == [256, 1024]
    assert plateau["includes_largest"] is False
    assert regimes(sizes, plateau) == [BELOW_PLATEAU, "plateau", "plateau", "beyond plateau"]


def test_longest_run_wins_over_a_later_short_one():
    # 3 points within 3 % of 4000 then 2 points at 5000: the run of three is longer
    plateau = find_plateau([1, 2, 3, 4, 5], [3950.0, 4000.0, 4050.0, 5000.0, 5050.0], 3.0, 2)
    assert plateau["sizes"] == [1, 2, 3]


def test_min_points_three():
    plateau = find_plateau([1, 2, 3], [100.0, 200.0, 201.0], 3.0, 3)
    assert plateau["found"] is False


def test_significant():
    assert significant(0.25240825675778145) == 0.252408
    assert significant(4294.967296) == 4294.97
    assert significant(1.7435186123e-05) == 1.74352e-05
    assert significant(120.0) == 120.0
    assert significant(0.0) == 0.0
    assert significant(-1234567.0, 3) == -1230000.0
