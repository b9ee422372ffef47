# -*- coding: utf-8 -*-
# Copyright: gpufleet.validation contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Summary fields say what the lists they summarise say: a count beside the list it counts is impossible data when
the two disagree (an edited or spliced result, or a probe defect), and a failure naming the field, its value and what
the list holds.

A probe declares its summaries as data (Summary) in its own package, and its summaries_agree check hands them to
summaries_agree here. The core names no probe. Pure Python.
"""
from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from typing import Any, Dict, List, Mapping, Optional, Sequence, Tuple

from ..result_fields import MISSING, dig, is_unavailable
from .check_helpers import gpu_label, make_check
from .model import Check


@dataclass(frozen=True)
class Summary:
    """field: dotted path of the summary; counts: dotted path of the list it summarises (both relative to each item of
    the data's list `each`, or to the data); where: (key, value) pairs an entry must have to be counted; by: the summary
    is {str(entry[by]): count} instead of one count; when: (dotted path from the data, value) pairs the data must have
    for the summary to apply (the summary means something else otherwise)."""

    field: str
    counts: str
    where: Tuple[Tuple[str, Any], ...] = ()
    by: str = ""
    each: str = ""
    when: Tuple[Tuple[str, Any], ...] = ()

    @property
    def words(self) -> str:
        """The declaration in words, as the pass names it: "gpus[].nvlink.active_count"."""
        return "%s%s" % (self.each + "[]." if self.each else "", self.field)


def _path(text: str) -> List[str]:
    return text.split(".") if text else []


def _is_count(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _entries(items: List[Any], where: Tuple[Tuple[str, Any], ...]) -> List[Any]:
    return [entry for entry in items if all(isinstance(entry, Mapping) and entry.get(key) == value for key, value in where)]


def _where_words(where: Tuple[Tuple[str, Any], ...]) -> str:
    return " with %s" % " and ".join("%s %s" % (key, str(value).lower() if isinstance(value, bool) else value)
                                     for key, value in where) if where else ""


def _disagreement(summary: Summary, base: Any, prefix: str) -> Optional[Tuple[str, Any, Any]]:
    """(the disagreement in words, the summary's value, what the list says) or None when they agree or cannot be
    compared (either absent, unreadable, or not of the declared kind: the schema, not this check, owns the kinds)."""
    value, items = dig(base, *_path(summary.field)), dig(base, *_path(summary.counts))
    if value is MISSING or items is MISSING or is_unavailable(value) or not isinstance(items, list):
        return None
    entries = _entries(items, summary.where)
    listed = "%s%s holds" % (prefix, summary.counts)
    if summary.by:
        if not isinstance(value, Mapping) or not all(_is_count(count) for count in value.values()):
            return None
        said = {str(key): count for key, count in value.items()}
        found = dict(Counter(str(entry.get(summary.by)) for entry in entries if isinstance(entry, Mapping)))
        if said == found:
            return None
        return ("%s%s is %s but %s %s (counted by %s%s)" % (prefix, summary.field, _counts_words(said), listed,
                                                            _counts_words(found), summary.by, _where_words(summary.where)),
                _counts_words(said), _counts_words(found))
    if not _is_count(value) or value == len(entries):
        return None
    entries_word = "entry" if len(entries) == 1 else "entries"
    return ("%s%s is %d but %s %d %s%s" % (prefix, summary.field, value, listed, len(entries), entries_word,
                                           _where_words(summary.where)),
            value, len(entries))


def _counts_words(counts: Mapping[str, int]) -> str:
    return "{%s}" % ", ".join("%s: %d" % (key, counts[key]) for key in sorted(counts)) if counts else "{}"


def _applies(summary: Summary, data: Mapping[str, Any]) -> bool:
    return all(dig(data, *_path(path)) == value for path, value in summary.when)


def _bases(summary: Summary, data: Mapping[str, Any]) -> List[Tuple[Any, str, Optional[Dict[str, Any]]]]:
    """(the mapping the paths start from, its path from the data, the GPU it is about or None)."""
    if not summary.each:
        return [(data, "", None)]
    items = dig(data, *_path(summary.each))
    if not isinstance(items, list):
        return []
    bases = []
    for position, item in enumerate(items):
        if not isinstance(item, Mapping):
            continue
        gpu = dict(item) if isinstance(item.get("uuid"), str) else None
        bases.append((item, "%s[%d]." % (summary.each, position), gpu))
    return bases


def _compared(summary: Summary, base: Any) -> bool:
    value, items = dig(base, *_path(summary.field)), dig(base, *_path(summary.counts))
    return value is not MISSING and not is_unavailable(value) and isinstance(items, list)


def _why_not_compared(summary: Summary, data: Mapping[str, Any]) -> str:
    if not _applies(summary, data):
        return "%s applies only where %s" % (summary.words, " and ".join("%s is %s" % (path, value) for path, value in summary.when))
    return "%s was not recorded beside %s%s" % (summary.words, summary.each + "[]." if summary.each else "", summary.counts)


def summaries_agree(declarations: Sequence[Summary], host: str, data: Dict[str, Any], rule: Dict[str, Any]) -> List[Check]:
    """One failure per summary that disagrees with its list (the rule's severity), else one pass naming the summaries
    compared, or a skip when none was recorded beside its list."""
    checks: List[Check] = []
    compared: List[str] = []
    for summary in declarations:
        if not _applies(summary, data):
            continue
        for base, prefix, gpu in _bases(summary, data):
            if not _compared(summary, base):
                continue
            if summary.words not in compared:
                compared.append(summary.words)
            found = _disagreement(summary, base, prefix)
            if found is not None:
                words, value, listed = found
                checks.append(make_check(rule, host, rule["severity"], "%s%s: a summary that disagrees with the list it "
                                         "summarises is impossible data (an edited or spliced result, or a probe defect)"
                                         % ("%s: " % gpu_label(gpu) if gpu is not None else "", words), gpu, value=value,
                                         reference=listed, reference_source="%s%s" % (prefix, summary.counts),
                                         threshold="== what the list holds"))
    if checks:
        return checks
    if not compared:
        why = "; ".join(_why_not_compared(summary, data) for summary in declarations)
        return [make_check(rule, host, "skip", "no summary was compared: %s" % why)]
    return [make_check(rule, host, "pass", "every summary field agrees with the list it summarises (%s)" % ", ".join(compared),
                       value=len(compared), threshold="== what the list holds")]
