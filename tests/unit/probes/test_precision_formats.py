"""Error measures and every representation against values computed by hand (powers of two keep the scales exact)."""
import math

import pytest

from probe_packages.precision.formats import FORMATS, measure, reference, representers, scale_bits_per_element
from probe_packages.precision.measures import error_summary, relative_error, sqnr_db

torch = pytest.importorskip("torch")
BY_NAME = {fmt.name: fmt for fmt in FORMATS}


def run(name, values):
    return measure(torch, reference(torch, torch.tensor(values, dtype=torch.float32)), BY_NAME[name])


def represent(name, values):
    return representers(torch)[name](torch.tensor(values, dtype=torch.float32)).tolist()


def test_relative_error_and_sqnr_of_known_sums():
    assert relative_error(100.0, 1.0) == pytest.approx(0.1)
    assert sqnr_db(100.0, 1.0) == pytest.approx(20.0)
    assert sqnr_db(1.0, 1.0) == 0.0 and sqnr_db(1.0, 4.0) == pytest.approx(-10 * math.log10(4))
    assert error_summary(100.0, 1.0) == {"relative_error": pytest.approx(0.1), "sqnr_db": pytest.approx(20.0), "exact": False,
                                         "outcome": "finite"}
    assert error_summary(4.0, 0.0) == {"relative_error": 0.0, "sqnr_db": None, "exact": True, "outcome": "exact"}
    assert error_summary(4.0, math.inf) == {"relative_error": None, "sqnr_db": None, "exact": False, "outcome": "infinite"}
    assert error_summary(4.0, math.nan)["outcome"] == "infinite"
    assert error_summary(0.0, 1.0) == {"relative_error": None, "sqnr_db": None, "exact": False, "outcome": "undefined"}
    assert error_summary(0.0, 0.0) == {"relative_error": None, "sqnr_db": None, "exact": True, "outcome": "exact"}


def test_int8_per_tensor_of_a_known_vector():
    # absmax 127 -> scale 1; round half to even: 2.5 -> 2, -3.5 -> -4, 0.25 -> 0 (flushed to zero)
    assert represent("int8_per_tensor", [127.0, 2.5, -3.5, 0.25]) == [127.0, 2.0, -4.0, 0.0]
    entry = run("int8_per_tensor", [127.0, 2.5, -3.5, 0.25])
    sum_x2, sum_e2 = 127.0 ** 2 + 2.5 ** 2 + 3.5 ** 2 + 0.25 ** 2, 0.5 ** 2 + 0.5 ** 2 + 0.25 ** 2  # 16147.5625, 0.5625
    assert entry["sqnr_db"] == pytest.approx(10 * math.log10(sum_x2 / sum_e2), rel=1e-9)  # 44.5799 dB
    assert entry["sqnr_db"] == pytest.approx(44.5799, abs=1e-4)
    assert entry["relative_error"] == pytest.approx(0.75 / math.sqrt(sum_x2), rel=1e-9)  # 0.0059021
    assert (entry["exact"], entry["outcome"], entry["overflow_count"], entry["flushed_to_zero_count"]) == (False, "finite", 0, 1)
    assert (entry["bits_per_element"], entry["granularity"], entry["scale_bits_per_element"]) == (8, "tensor", 8.0)  # 32 / 4


def test_int4_per_tensor_and_clamping():
    # absmax 7 -> scale 1: [7, 2, -4, 0]; sum x^2 = 49 + 6.25 + 12.25 + 0.0625 = 67.5625, sum e^2 = 0.5625 -> 20.7959 dB
    assert represent("int4_per_tensor", [7.0, 2.5, -3.5, 0.25]) == [7.0, 2.0, -4.0, 0.0]
    assert run("int4_per_tensor", [7.0, 2.5, -3.5, 0.25])["sqnr_db"] == pytest.approx(10 * math.log10(67.5625 / 0.5625), rel=1e-9)
    assert represent("int4_per_tensor", [-7.0, 7.0, 0.5]) == [-7.0, 7.0, 0.0]  # +-7 levels, symmetric: no -8


def test_int8_per_channel_beats_per_tensor_on_rows_of_different_range():
    # row 0 absmax 127 (scale 1), row 1 = row 0 / 4 (scale 0.25)
    rows = [[127.0, 63.5], [31.75, 15.875]]
    assert represent("int8_per_channel", rows) == [[127.0, 64.0], [31.75, 16.0]]
    assert represent("int8_per_tensor", rows) == [[127.0, 64.0], [32.0, 16.0]]
    sum_x2 = 127.0 ** 2 + 63.5 ** 2 + 31.75 ** 2 + 15.875 ** 2  # 21421.328125
    channel, tensor = run("int8_per_channel", rows), run("int8_per_tensor", rows)
    assert channel["sqnr_db"] == pytest.approx(10 * math.log10(sum_x2 / (0.25 + 0.015625)), rel=1e-9)
    assert tensor["sqnr_db"] == pytest.approx(10 * math.log10(sum_x2 / (0.25 + 0.0625 + 0.015625)), rel=1e-9)
    assert channel["scale_bits_per_element"] == 16.0 and channel["effective_bits_per_element"] == 24.0  # 32 bits / 2 per row
    assert represent("int8_per_channel", [[0.0, 0.0], [1.0, -0.5]])[0] == [0.0, 0.0]  # an all-zero row: scale 1, no NaN


def test_fp8_e4m3_and_e5m2_with_power_of_two_scales():
    values = [448.0, 100.0, -3.0, 2.0 ** -11]
    # e4m3: scale 448 / 448 = 1; 100 lies halfway between 96 and 104 -> 96 (even mantissa); 2^-11 is below half of
    # e4m3's smallest subnormal 2^-9 -> 0
    assert represent("fp8_e4m3", values) == [448.0, 96.0, -3.0, 0.0]
    # e5m2: scale 448 / 57344 = 2^-7; 100 / 2^-7 = 12800 -> 12288 (1.5 x 2^13) -> 96; the rest exact
    assert represent("fp8_e5m2", values) == [448.0, 96.0, -3.0, 2.0 ** -11]
    sum_x2 = 448.0 ** 2 + 100.0 ** 2 + 9.0 + 2.0 ** -22
    e4m3, e5m2 = run("fp8_e4m3", values), run("fp8_e5m2", values)
    assert e4m3["sqnr_db"] == pytest.approx(10 * math.log10(sum_x2 / (16.0 + 2.0 ** -22)), rel=1e-12)
    assert e5m2["sqnr_db"] == pytest.approx(10 * math.log10(sum_x2 / 16.0), rel=1e-12)  # 41.1957 dB
    assert (e4m3["flushed_to_zero_count"], e5m2["flushed_to_zero_count"]) == (1, 0)
    # a scale that is no power of two: the absmax maps onto 448 and comes back within float32 rounding
    assert represent("fp8_e4m3", [-0.001, 0.0005])[0] == pytest.approx(-0.001, rel=1e-6)


def test_fp16_and_bf16_cast_and_back():
    # bf16 keeps 7 mantissa bits: 1 + 2^-8 lies halfway between 1 and 1 + 2^-7 -> 1 (even); fp16 keeps it exactly
    assert represent("bf16", [1.0 + 2.0 ** -8]) == [1.0] and represent("fp16", [1.0 + 2.0 ** -8]) == [1.0 + 2.0 ** -8]
    bf16 = run("bf16", [1.0 + 2.0 ** -8, 2.0])
    sum_x2 = (1.0 + 2.0 ** -8) ** 2 + 4.0
    assert bf16["sqnr_db"] == pytest.approx(10 * math.log10(sum_x2 / 2.0 ** -16), rel=1e-12)
    exact = run("fp16", [1.0, 0.5, -0.25])
    assert (exact["exact"], exact["sqnr_db"], exact["relative_error"], exact["outcome"]) == (True, None, 0.0, "exact")
    assert (exact["bits_per_element"], exact["granularity"], exact["scale_bits_per_element"]) == (16, "none", 0.0)


def test_fp16_overflow_and_underflow():
    over = run("fp16", [1.0, 70000.0])
    assert (over["outcome"], over["sqnr_db"], over["relative_error"], over["overflow_count"]) == ("infinite", None, None, 1)
    assert run("bf16", [1.0, 70000.0])["outcome"] == "finite"  # bf16's 8-bit exponent reaches 3.4e38
    # 2^-26 is below fp16's smallest subnormal 2^-24 (and below half of it): it flushes to zero, error 2^-26
    under = run("fp16", [1.0, 2.0 ** -26])
    assert under["flushed_to_zero_count"] == 1
    assert under["sqnr_db"] == pytest.approx(10 * math.log10((1.0 + 2.0 ** -52) / 2.0 ** -52), rel=1e-9)  # 156.5 dB


def test_per_channel_needs_two_dimensions_and_scale_bits():
    with pytest.raises(ValueError, match="per-channel needs a channel axis"):
        run("int8_per_channel", [1.0, 2.0])
    assert scale_bits_per_element(BY_NAME["int4_per_channel"], (30522, 384)) == 32.0 / 384
    assert scale_bits_per_element(BY_NAME["fp8_e4m3"], (2, 4)) == 4.0
    assert [(fmt.name, fmt.bits_per_element) for fmt in FORMATS] == [
        ("fp16", 16), ("bf16", 16), ("fp8_e4m3", 8), ("fp8_e5m2", 8), ("int8_per_tensor", 8), ("int8_per_channel", 8),
        ("int4_per_tensor", 4), ("int4_per_channel", 4)]


def test_an_all_zero_tensor_is_exact_everywhere():
    for fmt in FORMATS:
        entry = measure(torch, reference(torch, torch.zeros(2, 2)), fmt)
        assert (entry["exact"], entry["relative_error"], entry["sqnr_db"]) == (True, None, None), fmt.name
