"""Roofline maths of the gemm probe, against hand-computed values."""
import pytest

from probe_packages.gemm import roofline


def test_square_bf16_work_traffic_intensity():
    # 2 * 8192^3 FLOP; A, B and C of 8192^2 elements, 2 bytes each.
    assert roofline.flop(8192, 8192, 8192) == 1099511627776
    assert roofline.bytes_moved(8192, 8192, 8192, 2, 2) == 402653184
    assert roofline.arithmetic_intensity(8192, 8192, 8192, 2, 2) == pytest.approx(8192 / 3)


def test_fp8_counts_one_byte_inputs_and_a_bf16_output():
    # (8192^2 + 8192^2) * 1 + 8192^2 * 2 = 4 * 8192^2
    assert roofline.bytes_moved(8192, 8192, 8192, 1, 2) == 268435456
    assert roofline.arithmetic_intensity(8192, 8192, 8192, 1, 2) == pytest.approx(4096.0)


def test_decode_shape_is_memory_bound_on_an_h200_roof():
    # M=1 against the Llama-70B MLP up projection: (8192 + 8192*28672) * 2 + 28672 * 2 bytes.
    assert roofline.bytes_moved(1, 28672, 8192, 2, 2) == 469835776
    intensity = roofline.arithmetic_intensity(1, 28672, 8192, 2, 2)
    assert intensity == pytest.approx(469762048 / 469835776)
    ridge = roofline.ridge_flop_per_byte(989, 4000)
    assert ridge == pytest.approx(247.25)
    assert roofline.classify(intensity, ridge) == roofline.MEMORY_BOUND
    assert roofline.classify(8192 / 3, ridge) == roofline.COMPUTE_BOUND
    assert roofline.classify(ridge, ridge) == roofline.COMPUTE_BOUND  # at the ridge: the compute roof is the bound
    # intensity x 4000 GB/s = 3.9994 TFLOP/s, far under the 989 peak
    assert roofline.attainable_tflops(intensity, 989, 4000) == pytest.approx(intensity * 4.0)
    assert roofline.attainable_tflops(8192 / 3, 989, 4000) == 989


def test_ridge_of_the_datasheet_h200_and_bad_inputs():
    assert roofline.ridge_flop_per_byte(989, 4800) == pytest.approx(206.0417, rel=1e-6)
    with pytest.raises(ValueError):
        roofline.ridge_flop_per_byte(989, 0)
    with pytest.raises(ValueError):
        roofline.ridge_flop_per_byte(-1, 4800)


def test_rate_and_percent():
    # 8192^3 bf16 in 1.39 ms: 791.0 TFLOP/s
    assert roofline.tflops_of(8192, 8192, 8192, 1.39e-3) == pytest.approx(1099511627776 / 1.39e-3 / 1e12)
    assert roofline.tflops_of(8192, 8192, 8192, 1.39e-3) == pytest.approx(791.02, abs=0.01)
    assert roofline.percent(791.0, 989.0) == pytest.approx(79.98, abs=0.01)
    with pytest.raises(ValueError):
        roofline.tflops_of(1, 1, 1, 0.0)
