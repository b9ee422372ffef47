# -*- coding: utf-8 -*-
# Copyright: gpufleet.validation contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The one parse of a probe's JSON, on the host as the probe's result and on the controller as a stored result.

Pure Python (standard library only; hosts run Python >= 3.9). Python's json.loads takes the last of two equal keys
(``"status": "error"`` then ``"status": "ok"`` reads as ok), reads NaN, Infinity and 1e400 as floats no schema can
bound, and recurses once per nesting level (200,000 levels raise RecursionError). ``loads`` refuses all of these with
a one-line StrictJSONError (a ValueError), so a caller that keeps what it could not trust keeps these too (docs/store.md).
"""
from __future__ import annotations

import json
import math
import re

# The deepest result a probe writes nests 12 levels (gemm); 64 leaves room for growth and stays far below the
# recursion limit of any Python that parses it.
MAX_DEPTH = 64
# A JSON string, escapes included: removed before the brackets are counted, so a "[" inside a string is not one.
_JSON_STRING = re.compile(r'"[^"\\]*(?:\\.[^"\\]*)*"', re.DOTALL)
_NOT_BRACKET = re.compile(r"[^\[\]{}]+")
_AS_PARENTHESES = {ord("["): "(", ord("{"): "(", ord("]"): ")", ord("}"): ")"}
# A number that could be too large has 20 digits in a row (2 ** 64 has 20) or an exponent of 3 digits (the largest
# float is about 1.8e308). Outside strings, with every digit written 0, "E" as "e" and signs dropped, such a number
# shows as one of these; a text without either holds no number that _bounded_int or _finite_float refuses, so it is
# parsed without them (each a Python call per number).
_NUMBER_SHAPE = str.maketrans("123456789E", "000000000e", "+-")
_LONG_NUMBER_SHAPES = ("0" * 20, "e000")
# No counter a probe reads is wider than 64 bits; a larger integer would not even convert to a float for the judge.
INTEGER_LIMIT = 2 ** 64


class StrictJSONError(ValueError):
    """Why a text is not a JSON document this collection accepts, in one line."""


def nesting_depth(text, limit=MAX_DEPTH, outside_strings=None):
    """How deep arrays and objects nest in text (0 for a scalar), counted without recursion and at most to limit + 1:
    the innermost pairs of brackets are removed once per level, each pass a scan of the text at C speed.
    outside_strings: _outside_strings(text), where the caller has it already."""
    if outside_strings is None:
        outside_strings = _outside_strings(text)
    brackets = _NOT_BRACKET.sub("", outside_strings).translate(_AS_PARENTHESES)
    depth = 0
    while brackets and depth <= limit:
        inner = brackets.replace("()", "")
        if inner == brackets:  # unbalanced: not JSON, which json.loads says better
            break
        brackets = inner
        depth += 1
    return depth


def _outside_strings(text):
    """text without its JSON strings. Where no quote is escaped and quotes pair up, every other piece between quotes is
    a string, cut out at C speed; otherwise each string is matched, escapes included."""
    if '\\"' in text or text.count('"') % 2:
        return _JSON_STRING.sub("", text)
    return "".join(text.split('"')[::2])


def _refuse_duplicates(pairs):
    document = dict(pairs)
    if len(document) == len(pairs):
        return document
    seen = set()
    for key, unused_value in pairs:
        if key in seen:
            raise StrictJSONError("the key %s appears twice in one object (which one is meant cannot be known)"
                                  % json.dumps(key)[:80])
        seen.add(key)
    return document


def _refuse_constant(name):
    raise StrictJSONError("it holds %s, which is not a JSON number" % name)


def _finite_float(text):
    number = float(text)
    if not math.isfinite(number):
        raise StrictJSONError("the number %s is beyond the range of a float" % text[:40])
    return number


def _bounded_int(text):
    number = int(text)
    if abs(number) >= INTEGER_LIMIT:
        raise StrictJSONError("the integer %s%s is beyond 64 bits" % (text[:40], "..." if len(text) > 40 else ""))
    return number


def strict_decoder():
    """A json.JSONDecoder that refuses a duplicate key, NaN and Infinity as loads does, for a reader that decodes a
    large document a value at a time (its raw_decode); nesting too deep raises RecursionError there, for the caller."""
    return json.JSONDecoder(object_pairs_hook=_refuse_duplicates, parse_constant=_refuse_constant)


def loads(text, max_depth=MAX_DEPTH):
    """The JSON document in text; StrictJSONError for a duplicate key, NaN or Infinity (or a number that reads as
    one, or an integer beyond 64 bits), nesting deeper than max_depth, or anything json.loads refuses (its message, one line)."""
    outside_strings = _outside_strings(text)
    if nesting_depth(text, max_depth, outside_strings) > max_depth:
        raise StrictJSONError("it is nested deeper than %d levels, the most a result may have" % max_depth)
    shape = outside_strings.translate(_NUMBER_SHAPE)
    bounds = {"parse_float": _finite_float, "parse_int": _bounded_int} if any(long in shape for long in _LONG_NUMBER_SHAPES) else {}
    try:
        return json.loads(text, object_pairs_hook=_refuse_duplicates, parse_constant=_refuse_constant, **bounds)
    except StrictJSONError:
        raise
    except RecursionError:  # not reached below max_depth; kept so that no traceback can be the reason
        raise StrictJSONError("it is nested deeper than this Python can parse")
    except ValueError as exc:
        raise StrictJSONError(str(exc).splitlines()[0] if str(exc) else type(exc).__name__)
