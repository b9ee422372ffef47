# -*- coding: utf-8 -*-
# Copyright: gpufleet.validation contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Words and the majority for checks of computed products against their reference (pure: no Ansible, no torch).

A product comparison record (written by the probes that verify what they compute) holds differing_elements and, where
any differ, first_index [row, column], first_got, first_expected and max_abs_diff (numbers, or "nan"/"inf" where not
finite); its mode is bitwise, or tolerance with the tolerance it used.
"""
from __future__ import annotations

from collections import Counter
from typing import Any, Dict, Hashable, List, Optional, Sequence, Tuple


def _value(value: Any) -> str:
    # Nine significant digits, not the report's three: a flipped low bit of an fp32 element changes its seventh or later.
    return "%.9g" % value if isinstance(value, (int, float)) and not isinstance(value, bool) else str(value)


def difference_words(entry: Dict[str, Any]) -> str:
    """'3 elements differ, the first at [1, 2] (got -2.98, expected 2.98), max |diff| 5.97'."""
    count = entry.get("differing_elements")
    words = "%s element%s differ%s" % (count, "" if count == 1 else "s", "s" if count == 1 else "")
    index = entry.get("first_index")
    if isinstance(index, list) and len(index) == 2:
        words += ", the first at [%s, %s] (got %s, expected %s)" % (
            index[0], index[1], _value(entry.get("first_got")), _value(entry.get("first_expected")))
    return "%s, max |diff| %s" % (words, _value(entry.get("max_abs_diff")))


def mode_words(record: Dict[str, Any]) -> str:
    """How the products were compared: bit for bit, or within the stated tolerance and why."""
    if record.get("mode") != "tolerance":
        return "bit for bit"
    rest = record.get("at_rest_difference") if isinstance(record.get("at_rest_difference"), dict) else {}
    return ("within |diff| <= %s, not bit for bit: two products of the same inputs at rest differed in %s element(s) (max |diff| %s), "
            "so the library is not deterministic for this shape here" % (
                _value(record.get("tolerance")), rest.get("differing_elements"), _value(rest.get("max_abs_diff"))))


def injected_words(injected: Any) -> str:
    """The test aid's note: a mismatch that was put there on purpose says so."""
    if not isinstance(injected, dict):
        return ""
    return " (injected on purpose by the test aid inject_bit_flip %s)" % ", ".join(
        "%s %s" % (key, injected[key]) for key in sorted(injected))


def odd_ones(digests: Sequence[Tuple[Any, Hashable]]) -> Tuple[Optional[Hashable], List[Any]]:
    """(the digest more than half of the items share, or None, the items whose digest differs from it: every item when
    no digest holds a majority) of [(item, digest)]."""
    counts = Counter(digest for unused_item, digest in digests)
    if len(counts) <= 1:
        return (next(iter(counts)) if counts else None), []
    digest, count = counts.most_common(1)[0]
    if count * 2 <= len(digests):
        return None, [item for item, unused_digest in digests]
    return digest, [item for item, other in digests if other != digest]
