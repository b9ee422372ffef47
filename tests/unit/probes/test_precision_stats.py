"""Distribution statistics against values computed by hand."""
import math

import pytest

from probe_packages.precision.stats import channel_absmax, fp16_range, moments, tensor_stats, true_median

torch = pytest.importorskip("torch")


def test_one_two_three_four():
    # mean 2.5; deviations -1.5 -0.5 0.5 1.5; m2 = (2.25 + 0.25 + 0.25 + 2.25) / 4 = 1.25 (population);
    # m4 = (5.0625 + 0.0625 + 0.0625 + 5.0625) / 4 = 2.5625; Pearson kurtosis = 2.5625 / 1.25^2 = 1.64
    stats = moments(torch.tensor([1.0, 2.0, 3.0, 4.0]))
    assert stats["element_count"] == 4
    assert (stats["min"], stats["max"], stats["absmax"], stats["mean"]) == (1.0, 4.0, 4.0, 2.5)
    assert stats["std"] == pytest.approx(math.sqrt(1.25), rel=1e-12)
    assert stats["kurtosis_pearson"] == pytest.approx(1.64, rel=1e-12)
    assert (stats["outlier_count"], stats["outlier_fraction"]) == (0, 0.0)


def test_absmax_comes_from_the_negative_side():
    stats = moments(torch.tensor([-5.0, 1.0, 2.0]))
    assert (stats["min"], stats["max"], stats["absmax"]) == (-5.0, 2.0, 5.0)


def test_one_spike_among_zeros_is_an_outlier_past_36_zeros():
    # n zeros and one a: mean = a / (n + 1), std = a sqrt(n) / (n + 1), the spike's deviation a n / (n + 1) = sqrt(n) std.
    # n = 49: 7 std > 6 std, one outlier of 50; Pearson kurtosis of a two-point law with p = 1/50: 1 / (p (1 - p)) - 3
    spike = torch.zeros(50)
    spike[17] = 3.0
    stats = moments(spike)
    assert stats["mean"] == pytest.approx(3.0 / 50) and stats["std"] == pytest.approx(3.0 * 7 / 50)
    assert (stats["outlier_count"], stats["outlier_fraction"]) == (1, 0.02)
    assert stats["kurtosis_pearson"] == pytest.approx(2500.0 / 49 - 3, rel=1e-12)
    # n = 35: the spike lies sqrt(35) = 5.92 std out: no outlier
    assert moments(torch.cat([torch.zeros(35), torch.tensor([3.0])]))["outlier_count"] == 0


def test_a_constant_tensor_has_no_kurtosis_and_no_outliers():
    stats = moments(torch.full((4,), 2.0))
    assert stats["std"] == 0.0 and stats["outlier_count"] == 0
    assert stats["kurtosis_pearson"] == {"unavailable": "the tensor is constant: kurtosis is 0 / 0"}


def test_true_median():
    assert true_median(torch.tensor([3.0, 1.0, 2.0])) == 2.0
    assert true_median(torch.tensor([4.0, 1.0, 3.0, 2.0])) == 2.5  # torch.median would say 2.0
    with pytest.raises(ValueError):
        true_median(torch.tensor([]))


def test_channel_absmax_spread_over_rows():
    # rows' absmaxima: |-4| = 4, 1, 0.5, 2 -> min 0.5, median (1 + 2) / 2 = 1.5, max 4, max / median = 4 / 1.5
    matrix = torch.tensor([[1.0, -4.0], [1.0, 0.5], [0.5, -0.25], [2.0, 0.0]])
    spread = channel_absmax(matrix)
    assert spread == {"axis": 0, "channels": 4, "min": 0.5, "median": 1.5, "max": 4.0, "max_over_median": pytest.approx(8.0 / 3)}
    assert channel_absmax(torch.ones(2, 3, 4))["channels"] == 2  # the rest of each row is flattened
    assert channel_absmax(torch.tensor([1.0, 2.0])) == {"unavailable": "a 1-D tensor has no channel axis"}
    zero_median = channel_absmax(torch.tensor([[0.0], [0.0], [3.0]]))
    assert zero_median["max_over_median"] == {"unavailable": "the median row absmax is 0"}
    assert "channel_absmax" in tensor_stats(matrix)


def test_fp16_range_counts():
    # 65504 is fp16's largest value (not above it); 2^-24 its smallest subnormal (not below it); 2^-14 its smallest normal
    values = torch.tensor([70000.0, -65505.0, 65504.0, 2.0 ** -25, -(2.0 ** -30), 2.0 ** -24, 2.0 ** -15, 2.0 ** -14, 0.0, 1.0])
    ranges = fp16_range(values)
    assert ranges["above_max_count"] == 2
    assert ranges["below_smallest_subnormal_count"] == 2
    assert ranges["subnormal_count"] == 2
    assert ranges["zero_count"] == 1
    assert (ranges["max_finite"], ranges["smallest_subnormal"], ranges["smallest_normal"]) == (65504.0, 2.0 ** -24, 2.0 ** -14)
