"""Numbers as an engineer writes them: the one formatter every text a person reads goes through.

The rule, for a float: three significant digits, but never fewer integer digits than the value has, in the unit the
value already has (a time in seconds stays in seconds: 0.0123 s, never 12.3 ms).

    4244.39 -> 4244      80.4265 -> 80.4      3.7912 -> 3.79      0.1175 -> 0.118      97.34 -> 97.3

- Rounding is half up on the value's shortest decimal spelling (repr), so 0.1175 reads 0.118 as a person rounding
  the printed number would write it, not 0.117 as its binary neighbour 0.11749999... would round.
- Trailing zeros are dropped: 2.50 reads 2.5, 35.0 reads 35 (a whole float reads as the integer it is).
- Below 1e-4 and from 1e15 on the number is written with an exponent, three significant digits, zeros dropped:
  1.0e-06 -> 1e-06, 1.234e-05 -> 1.23e-05 (Python's %g spelling of the exponent).
- Integers are written exactly (a GPU index, a count, a size in bytes: 143771, 1073741824); so are booleans, None
  and strings, as str() writes them: only a float's digits are chosen.
- NaN and the infinities read NaN, ∞ and -∞.

The unit table (UNIT_DECIMALS) caps the decimals of one unit: a percentage has at most two, so a change of 0.00211 %
reads 0 % and a spread of 0.64 % stays 0.64 % (the third digit of a tiny share is noise, not information). Every other
unit follows the rule as it is. The unit also decides the spelling of the quantity (format_quantity): a space before
it, "%" included (97.3 %), none before "×" (2.38×).

Text for machines keeps every digit: fleet.json and the Prometheus textfile write the floats themselves
(report/exports.py); this module is for the HTML, the Markdown, JUnit messages and the report's terminal lines.
Pure Python, stdlib only.
"""
from __future__ import annotations

import math
from decimal import ROUND_HALF_UP, Decimal
from typing import Any, Optional

SIGNIFICANT_DIGITS = 3
# Magnitudes outside [SMALLEST_FIXED, LARGEST_FIXED) are written with an exponent.
SMALLEST_FIXED = Decimal("1e-4")
LARGEST_FIXED = Decimal("1e15")
# Units whose numbers carry at most this many decimals.
UNIT_DECIMALS = {"%": 2}
# Units written right after the number, without a space.
ATTACHED_UNITS = frozenset({"×", "x"})


def _strip_zeros(text: str) -> str:
    return text.rstrip("0").rstrip(".") if "." in text else text


def _rounded(value: float, max_decimals: Optional[int]) -> Decimal:
    """The value to SIGNIFICANT_DIGITS digits, half up, keeping every integer digit (4244.39 -> 4244), and to at most
    max_decimals decimals. From LARGEST_FIXED on the value is returned as it is: _exponent rounds its mantissa."""
    exact = Decimal(repr(value))
    if abs(exact) >= LARGEST_FIXED:
        return exact
    # adjusted(): the power of ten of the leading digit (3 for 4244.39, -1 for 0.1175)
    decimals = max(0, SIGNIFICANT_DIGITS - 1 - exact.adjusted())
    if max_decimals is not None:
        decimals = min(decimals, max_decimals)
    return exact.quantize(Decimal(1).scaleb(-decimals), rounding=ROUND_HALF_UP)


def _exponent(rounded: Decimal) -> str:
    power = rounded.adjusted()
    mantissa = rounded.scaleb(-power).quantize(Decimal(1).scaleb(1 - SIGNIFICANT_DIGITS), rounding=ROUND_HALF_UP)
    if abs(mantissa) >= 10:  # 9.9996e+15 rounds up to 1e+16
        mantissa, power = mantissa.scaleb(-1), power + 1
    return "%se%s%02d" % (_strip_zeros("%s" % mantissa), "-" if power < 0 else "+", abs(power))


def format_number(value: Any, max_decimals: Optional[int] = None) -> str:
    """A number as a person reads it (the rule above); anything that is not a float as str() writes it.

    max_decimals: at most this many decimals (a unit's cap, UNIT_DECIMALS); a value too small for them reads 0."""
    if not isinstance(value, float):
        return str(value)
    if math.isnan(value):
        return "NaN"
    if math.isinf(value):
        return "∞" if value > 0 else "-∞"
    if value.is_integer() and abs(value) < 1e15:
        return str(int(value))
    rounded = _rounded(value, max_decimals)
    if rounded.is_zero():
        return "0"
    if SMALLEST_FIXED <= abs(rounded) < LARGEST_FIXED:
        return _strip_zeros("%s" % rounded)
    return _exponent(rounded)


def format_quantity(value: Any, unit: str = "", signed: bool = False) -> str:
    """A number with its unit: "4244 GB/s", "97.3 %", "2.38×"; the number alone when unit is "".

    signed: a change, written with its sign ("+3.2 %", "-0.8 %"; "+0 %" for a rise too small for the unit's digits)."""
    text = format_number(value, UNIT_DECIMALS.get(unit))
    if signed and isinstance(value, (int, float)) and not isinstance(value, bool) and value != 0 and not math.isnan(value):
        if value > 0:
            text = "+" + text
        elif not text.startswith("-"):
            text = "-" + text
    if not unit:
        return text
    return text + unit if unit in ATTACHED_UNITS else "%s %s" % (text, unit)
