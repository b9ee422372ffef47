"""probelib.fields: a JSON number is an int or a float, never a boolean; the load summary, the gemm power states and the
precision explanation read numbers through these three helpers."""
from probelib.fields import is_number, number_or_none, numbers, unavailable


def test_a_json_number_is_an_int_or_a_float_never_a_boolean():
    assert is_number(3) and is_number(2.5) and is_number(-1)
    assert not any(is_number(value) for value in (True, False, None, "3", [1], {"unavailable": "x"}))


def test_number_or_none():
    assert number_or_none(1980) == 1980.0 and isinstance(number_or_none(1980), float)
    assert number_or_none(0) == 0.0 and number_or_none(-2.5) == -2.5
    for value in (None, True, unavailable("not read"), {"median": 1}, [1], "300"):
        assert number_or_none(value) is None


def test_numbers_keeps_the_numbers_as_floats():
    assert numbers([1, None, 2.5, True, unavailable("x"), "3", 0]) == [1.0, 2.5, 0.0]
    assert numbers([]) == [] and numbers(value for value in (4,)) == [4.0]
