"""judge.stats against hand-computed values."""
from __future__ import annotations

import math

import pytest

from ansible_collections.gpufleet.validation.plugins.plugin_utils.judge import stats


def test_median_odd_and_even():
    assert stats.median([3, 1, 2]) == 2
    assert stats.median([4, 1, 3, 2]) == 2.5
    with pytest.raises(ValueError):
        stats.median([])


def test_mad_and_robust_z_by_hand():
    values = [1, 2, 3, 4, 100]
    # median 3; |x - 3| = 2, 1, 0, 1, 97 -> sorted 0, 1, 1, 2, 97 -> MAD 1
    assert stats.median(values) == 3
    assert stats.mad(values) == 1
    assert stats.robust_z(100, 3, 1) == pytest.approx(0.6745 * 97)   # 65.4265
    assert stats.robust_z(1, 3, 1) == pytest.approx(-1.349)
    assert stats.robust_z(5, 3, 0) is None


def test_coefficient_of_variation_by_hand():
    # mean 5, squared deviations sum 32, sample variance 32 / 7, sd 2.13809
    assert stats.coefficient_of_variation([2, 4, 4, 4, 5, 5, 7, 9]) == pytest.approx(math.sqrt(32 / 7) / 5)
    assert stats.coefficient_of_variation([5]) is None
    assert stats.coefficient_of_variation([-1, 1]) is None


def test_outlier_robust_z():
    result = stats.outlier_test(100, [1, 2, 3, 4, 100])
    assert result.outlier is True and result.method == "robust_z"
    assert result.z == pytest.approx(65.4265) and result.median == 3 and result.mad == 1 and result.count == 5
    assert stats.outlier_test(1, [1, 2, 3, 4, 100]).outlier is False


def test_outlier_mad_zero_falls_back_to_relative_tolerance():
    population = [80, 80, 80, 80, 95]
    result = stats.outlier_test(95, population)
    assert result.outlier is True and result.method == "relative" and result.z is None
    assert "18.8 %" in result.reason
    assert stats.outlier_test(85, [80, 80, 80, 80, 85]).outlier is False   # 6.25 % < 10 %


def test_outlier_needs_three_values():
    result = stats.outlier_test(300, [80, 300])
    assert result.outlier is None
    assert result.reason == "not enough peers: 2 value(s), at least 3 needed"


def test_noise_floor_keeps_tiny_differences_in():
    # MAD 0.1 makes 81.0 a robust-z outlier (z 6.745) but it is 1.1 % from the median
    population = [80.0, 80.1, 79.9, 80.0, 81.0]
    assert stats.outlier_test(81.0, population).outlier is True
    assert stats.outlier_test(81.0, population, noise_floor=0.05).outlier is False


def test_relative_change():
    assert stats.relative_change(80, 88) == pytest.approx(0.1)
    assert stats.relative_change(0, 5) is None
