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
# No counter a probe reads is wider than 64 bits; a larger integer would not even convert to a float for the judge.
INTEGER_LIMIT = 2 ** 64


class StrictJSONError(ValueError):
    """Why a text is not a JSON document this collection accepts, in one line."""


def nesting_depth(text, limit=MAX_DEPTH):
    """How deep arrays and objects nest in text (0 for a scalar), counted without recursion and at most to limit + 1:
    the innermost pairs of brackets are removed once per level, each pass a scan of the text at C speed."""
    brackets = _NOT_BRACKET.sub("", _JSON_STRING.sub("", text)).translate(_AS_PARENTHESES)
    depth = 0
    while brackets and depth <= limit:
        inner = brackets.replace("()", "")
        if inner == brackets:  # unbalanced: not JSON, which json.loads says better
            break
        brackets = inner
        depth += 1
    return depth


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


def loads(text, max_depth=MAX_DEPTH):
    """The JSON document in text; StrictJSONError for a duplicate key, NaN or Infinity (or a number that reads as
    one, or an integer beyond 64 bits), nesting deeper than max_depth, or anything json.loads refuses (its message, one line)."""
    if nesting_depth(text, max_depth) > max_depth:
        raise StrictJSONError("it is nested deeper than %d levels, the most a result may have" % max_depth)
    try:
        return json.loads(text, object_pairs_hook=_refuse_duplicates, parse_constant=_refuse_constant,
                          parse_float=_finite_float, parse_int=_bounded_int)
    except StrictJSONError:
        raise
    except RecursionError:  # not reached below max_depth; kept so that no traceback can be the reason
        raise StrictJSONError("it is nested deeper than this Python can parse")
    except ValueError as exc:
        raise StrictJSONError(str(exc).splitlines()[0] if str(exc) else type(exc).__name__)
