# -*- coding: utf-8 -*-
# Copyright: gpufleet.validation contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""One cause, one row: which checks follow from which, declared as data, and the folding of a host's checks.

A rule (or a judge_checks entry) may say ``follows: [check id, ...]``: when one of those checks fails (fail or error)
on the same host, this check's own failure is a consequence of it, not a second finding. The judge then marks it
(Check.because = the root cause's id): the verdict's reasons and the gate name the root cause once, and the reports show
the consequences folded under it. A consequence never changes a verdict: the root cause already fails the host.

Patterns as in judge_checks: an id ending in ".*" covers every check under that prefix, one beginning with "*." the
same check of every probe; an exact id wins. Pure Python.
"""
from __future__ import annotations

from typing import Any, Dict, Iterable, List, Mapping, Optional, Sequence, Tuple

from .model import Check
from .rules import IdPatterns, rule_list

ROOT_STATUSES = ("fail", "error")
CONSEQUENCE_STATUSES = ("fail", "error", "warn")
# A probe that ended so (value of its probe_status check) may follow from a broken GPU stack; a timeout stays its own.
FOLDED_PROBE_OUTCOMES = ("unavailable", "error", "partial")
PROBE_STATUS_SUFFIX = ".probe_status"


class Causes:
    """What each check id follows from, read from rules documents (the first document that names an id wins)."""

    def __init__(self, *documents: Any) -> None:
        self.rules: Dict[str, Tuple[str, ...]] = {}
        self.judge_checks: IdPatterns[Tuple[str, ...]] = IdPatterns()
        for document in documents:
            for rule in rule_list(document):
                if isinstance(rule, Mapping) and isinstance(rule.get("id"), str):
                    self.rules.setdefault(rule["id"], _follows(rule))
            judge_checks = document.get("judge_checks") if isinstance(document, Mapping) else None
            for entry in judge_checks if isinstance(judge_checks, list) else []:
                if isinstance(entry, Mapping) and isinstance(entry.get("id"), str):
                    self.judge_checks.add(entry["id"], _follows(entry))

    def of(self, check_id: str) -> Tuple[str, ...]:
        """The check ids a check follows from, in the order declared (the first failing one is named)."""
        if check_id in self.rules:
            return self.rules[check_id]
        found = self.judge_checks.find(check_id)
        return found[2] if found is not None else ()


def _follows(entry: Mapping[str, Any]) -> Tuple[str, ...]:
    return tuple(item for item in entry.get("follows") or () if isinstance(item, str) and item)


def _same_subject(root: Check, check: Check) -> bool:
    """A root cause about one GPU (or another device: a port) explains only that GPU's consequences (and the host's); a
    host-level one explains all."""
    if root.device is not None and check.device is not None and root.device != check.device:
        return False
    return not root.gpu_uuid or not check.gpu_uuid or root.gpu_uuid == check.gpu_uuid


def _may_follow(check: Check) -> bool:
    if check.status not in CONSEQUENCE_STATUSES:
        return False
    return not check.id.endswith(PROBE_STATUS_SUFFIX) or check.value in FOLDED_PROBE_OUTCOMES


def fold_consequences(checks: Sequence[Check], causes: Causes, independent: Iterable[str] = ()) -> None:
    """Mark every check of one host that follows from a failing check of that host (check.because = the root's id,
    the root of a chain when the cause itself follows from another). independent: check ids never folded (the
    probe_status of a probe that needs no GPU stack)."""
    independent = frozenset(independent)
    failing: Dict[str, List[Check]] = {}
    for check in checks:
        if check.status in ROOT_STATUSES:
            failing.setdefault(check.id, []).append(check)

    def cause_of(check: Check) -> Optional[Check]:
        for cause_id in causes.of(check.id):
            if cause_id == check.id:
                continue
            for root in failing.get(cause_id, ()):
                if _same_subject(root, check):
                    return root
        return None

    for check in checks:
        if check.id in independent or not _may_follow(check):
            continue
        root, seen = cause_of(check), {id(check)}
        while root is not None and id(root) not in seen:
            seen.add(id(root))
            further = cause_of(root) if _may_follow(root) else None
            if further is None:
                break
            root = further
        if root is not None and root is not check:
            check.because = root.id


def root_causes(checks: Iterable[Check]) -> List[Check]:
    """The checks that are not consequences of another."""
    return [check for check in checks if not check.because]


def consequences_of(root: Check, checks: Iterable[Check]) -> List[Check]:
    return [check for check in checks if check.because == root.id and check is not root]
