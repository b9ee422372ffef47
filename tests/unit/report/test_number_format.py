import pytest

from ansible_collections.gpufleet.validation.plugins.plugin_utils.report.number_format import format_number, format_quantity


@pytest.mark.parametrize("value, text", [
    (4244.39, "4244"),         # never fewer integer digits than the value has
    (4245.95, "4246"),
    (1395.2, "1395"),
    (80.4265, "80.4"),
    (55.327, "55.3"),
    (3.7912, "3.79"),
    (5.549, "5.55"),
    (0.1175, "0.118"),         # half up on the printed digits, not on the binary 0.11749999...
    (0.0123, "0.0123"),        # a small time stays in its unit: 0.0123 s, not 12.3 ms
    (0.00012345, "0.000123"),
    (97.34, "97.3"),
    (-80.4265, "-80.4"),
    (99.95, "100"),            # rounding up past a power of ten
    (9.995, "10"),
    (2.5, "2.5"),              # trailing zeros dropped
    (0.1 + 0.2, "0.3"),
    (1234567.89, "1234568"),
])
def test_three_significant_digits_but_every_integer_digit(value, text):
    assert format_number(value) == text


@pytest.mark.parametrize("value, text", [
    (1.0e-6, "1e-06"),
    (1.234e-5, "1.23e-05"),
    (-1.5e-7, "-1.5e-07"),
    (9.9996e-5, "0.0001"),     # rounds up into the fixed range
    (0.0001, "0.0001"),
    (1e20, "1e+20"),
    (1e300, "1e+300"),
    (999999999999999.9, "1e+15"),
])
def test_below_1e_4_and_from_1e15_with_an_exponent(value, text):
    assert format_number(value) == text


@pytest.mark.parametrize("value, text", [
    (143771, "143771"),        # a size in MiB, a count: every digit
    (1073741824, "1073741824"),
    (0, "0"),
    (35.0, "35"),              # a whole float reads as the integer it is
    (-0.0, "0"),
    (700.0, "700"),
    (True, "True"),            # booleans, None and strings as str() writes them
    (None, "None"),
    ("0000:16:00.0", "0000:16:00.0"),
    (float("nan"), "NaN"),
    (float("inf"), "∞"),
    (float("-inf"), "-∞"),
])
def test_integers_and_what_is_not_a_number_are_untouched(value, text):
    assert format_number(value) == text


def test_a_percentage_has_at_most_two_decimals():
    assert format_quantity(97.34, "%") == "97.3 %"
    assert format_quantity(0.64, "%") == "0.64 %"
    assert format_quantity(0.0361, "%") == "0.04 %"
    assert format_quantity(0.00211, "%") == "0 %"
    assert format_quantity(2.0e-6, "%") == "0 %"
    assert format_quantity(0.00211, "GB/s") == "0.00211 GB/s"   # other units keep three significant digits
    assert format_number(0.00211, max_decimals=2) == "0" and format_number(-0.004, max_decimals=2) == "0"


def test_a_quantity_has_a_space_before_its_unit_except_times():
    assert format_quantity(4244.39, "GB/s") == "4244 GB/s"
    assert format_quantity(80.4265, "W") == "80.4 W"
    assert format_quantity(97.34, "%") == "97.3 %"
    assert format_quantity(2.384, "×") == "2.38×"
    assert format_quantity(3.7912, "") == "3.79"
    assert format_quantity(None, "W") == "None W"


def test_a_signed_quantity_shows_the_plus_of_a_rise():
    assert format_quantity(3.2456, "%", signed=True) == "+3.25 %"
    assert format_quantity(-0.84, "%", signed=True) == "-0.84 %"
    assert format_quantity(0.0, "%", signed=True) == "0 %"
    assert format_quantity(0.00211, "%", signed=True) == "+0 %"     # a rise too small for two decimals
    assert format_quantity(-0.00211, "%", signed=True) == "-0 %"
