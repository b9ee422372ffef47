# -*- coding: utf-8 -*-
# Copyright: gpufleet.validation contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Rules are data: {"rules": [{id, probe, check, severity, title, action, remedy, params, description}]}.

A rule's "check" names a function in a registry (a dict name -> function); nothing is ever evaluated as code.
Per-host overrides {rule_id: {"severity": ..., "params": {...}, "enabled": false}} are merged over the defaults.
"""
from __future__ import annotations

import copy
import math
from dataclasses import dataclass, field
from typing import Any, Dict, Generic, List, Mapping, Optional, Sequence, Tuple, TypeVar

from .baseline_origin import baseline_file

# A rule's shape is schemas/rules.schema.json's, which validates every rules file (rules_and_baselines.load_rules);
# these copies of its enums and keys, which the judge reads, are pinned to it by tests/unit/test_contract_owners.py.
SEVERITIES = ("fail", "warn")
RULE_KEYS = ("id", "probe", "check", "severity", "title", "action", "remedy", "params", "description", "enabled", "follows")
# What an operator does about a check that does not pass (a rule's "action"), and how the reports say it.
# rerun_when_idle: another job computes on the GPU (judge/busy.py); nothing is wrong with the host and it is never drained.
# check_inventory: the host is no GPU host at all (judge/verdict.py gpu_measured_check); nothing on it to repair.
# service: a fault that came back after every repair (judge/trends.py returning_fault): the last step of NVIDIA's ladder.
ACTIONS = ("service", "drain", "reboot", "reseat_rma", "fix_config", "check_inventory", "rerun", "rerun_when_idle", "none")
ACTION_WORDS = {"service": "service required", "drain": "drain", "reboot": "reboot", "reseat_rma": "reseat or RMA", "fix_config": "fix config",
                "check_inventory": "check the inventory", "rerun": "re-run", "rerun_when_idle": "re-run when the GPU is idle",
                "none": "none"}
# The worse an action, the earlier a host needing it is listed: a drained node before one whose config is off.
ACTION_RANK = {"service": 0, "drain": 1, "reseat_rma": 2, "reboot": 3, "fix_config": 4, "check_inventory": 4, "rerun": 5,
               "rerun_when_idle": 5, "none": 6, "": 7}
OVERRIDE_KEYS = ("severity", "params", "enabled")
STATUS_RANK = {"pass": 0, "skip": 0, "warn": 1, "error": 2, "fail": 3}
T = TypeVar("T")


@dataclass
class RuleContext:
    """What a check function may know beyond the probe data."""

    host: str
    sku: Optional[str] = None
    sku_reason: str = ""
    baseline: Optional[Dict[str, Any]] = None      # the host's baseline document, None when the SKU is unknown
    envelope: Dict[str, Any] = field(default_factory=dict)
    expected_gpus: Optional[int] = None            # the GPUs the host should have, None when nothing says
    expected_gpus_source: str = ""                 # where expected_gpus came from, in words
    # {probe: data} of the host's other results, for a check whose words need them (p2p reads tuning's PCIe path).
    host_data: Dict[str, Any] = field(default_factory=dict)
    machine: Any = None                            # ExpectedGpus.shape (judge/machine_facts.py): the machine probe's own account
    # {probe: envelope} of the host's previous run (store/previous.py), read back when asked; {} without one. For a check that
    # judges a counter rising between runs; drift of metrics and settings does not come through here.
    earlier_envelopes: Mapping[str, Any] = field(default_factory=dict)
    # The baseline files that could not be loaded (rules_and_baselines.load_baselines): named where a host has no SKU.
    baseline_problems: Sequence[str] = ()

    def baseline_source(self, key: str) -> str:
        if not self.baseline:
            return ""
        return "%s %s" % (baseline_file(self.baseline), key)


def rule_list(document: Any) -> List[Dict[str, Any]]:
    """The rules of a rules document ({"rules": [...]}) or of a plain list."""
    if isinstance(document, Mapping):
        return list(document.get("rules") or [])
    return list(document or [])


def value_kind(value: Any, boolean: str = "a boolean") -> str:
    """The YAML word for a value's type, for messages."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return boolean
    if isinstance(value, (int, float)):
        return "a number"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, Mapping):
        return "a mapping"
    if isinstance(value, (list, tuple)):
        return "a list"
    return type(value).__name__


def param_kind_problem(name: str, default: Any, value: Any) -> Optional[str]:
    """Why ``value`` cannot replace a param whose default is ``default``, or None.

    An override must be of the default's kind (a number for a number, a list for a list, ...); a param whose
    default is null (such as an expected count that the SKU's baseline fills in) takes a number or null.
    """
    wanted = "a number" if default is None else value_kind(default, "true or false")
    given = value_kind(value, "true or false")
    items = value if isinstance(value, (list, tuple)) else [value]
    if any(isinstance(item, float) and not math.isfinite(item) for item in items):
        return "param %s must be finite, not %r (a threshold of NaN or infinity compares with nothing)" % (name, value)
    if given == wanted or (default is None and value is None):
        return None
    return "param %s must be %s%s, not %s %r" % (name, wanted, " (or null)" if default is None else "", given, value)


# Values deepcopy returns as they are: copied without its call, since every host's rules are normalized again.
_ATOMS = (str, int, float, bool, type(None))


def normalize_rule(rule: Mapping[str, Any]) -> Dict[str, Any]:
    normalized = {key: value if type(value) in _ATOMS else copy.deepcopy(value)  # pylint: disable=unidiomatic-typecheck
                  for key, value in ((key, rule.get(key)) for key in RULE_KEYS)}
    normalized["params"] = dict(normalized["params"] or {})
    normalized["enabled"] = True if rule.get("enabled") is None else bool(rule.get("enabled"))
    normalized["description"] = normalized["description"] or ""
    normalized["overridden"] = []
    return normalized


def effective_rules(defaults: Any, overrides: Optional[Mapping[str, Any]] = None) -> Tuple[List[Dict[str, Any]], List[str]]:
    """The rules for one host: defaults with the host's overrides merged over them.

    Returns (rules, problems). Each rule is a dict with id, probe, check, severity, params, description, enabled,
    and "overridden" (which of severity/params/enabled the host changed). Problems are sentences: an override
    naming a rule that does not exist, an unknown param (not among the rule's default params), an unknown
    key, a severity other than fail/warn. A broken part of an override is ignored, the rest applies.
    """
    rules = [normalize_rule(rule) for rule in rule_list(defaults)]
    by_id = {rule["id"]: rule for rule in rules}
    problems: List[str] = []
    if overrides is None:
        return rules, problems
    if not isinstance(overrides, Mapping):
        return rules, ["rule overrides must be a mapping of rule id to {severity, params, enabled}, not %s" % type(overrides).__name__]
    for rule_id in sorted(overrides, key=str):
        change = overrides[rule_id]
        rule = by_id.get(rule_id)
        if rule is None:
            problems.append("override for unknown rule %s (no such rule id in the rules; check the spelling)" % rule_id)
            continue
        if not isinstance(change, Mapping):
            problems.append("override for %s must be a mapping with severity, params or enabled" % rule_id)
            continue
        for key in sorted(set(change) - set(OVERRIDE_KEYS), key=str):
            problems.append("override for %s: unknown key %s (known: %s)" % (rule_id, key, ", ".join(OVERRIDE_KEYS)))
        if "severity" in change:
            if change["severity"] in SEVERITIES:
                rule["severity"] = change["severity"]
                rule["overridden"].append("severity")
            else:
                problems.append("override for %s: severity %r is not one of %s" % (rule_id, change["severity"], ", ".join(SEVERITIES)))
        if "enabled" in change:
            if isinstance(change["enabled"], bool):
                rule["enabled"] = change["enabled"]
                rule["overridden"].append("enabled")
            else:
                problems.append("override for %s: enabled must be true or false" % rule_id)
        params = change.get("params")
        if params is not None:
            if not isinstance(params, Mapping):
                problems.append("override for %s: params must be a mapping" % rule_id)
                continue
            for name in sorted(params, key=str):
                if name not in rule["params"]:
                    problems.append("override for %s: unknown param %s (the rule takes: %s)" % (
                        rule_id, name, ", ".join(sorted(rule["params"])) or "no params"))
                    continue
                mistyped = param_kind_problem(name, rule["params"][name], params[name])
                if mistyped:
                    problems.append("override for %s: %s; the rule keeps its default" % (rule_id, mistyped))
                    continue
                rule["params"][name] = copy.deepcopy(params[name])
                if "params" not in rule["overridden"]:
                    rule["overridden"].append("params")
    return rules, problems


def cap_status(status: str, severity: str) -> str:
    """A rule's severity is the worst status it may give: severity "warn" turns its fails into warns."""
    if severity == "warn" and status == "fail":
        return "warn"
    return status


@dataclass(frozen=True)
class CheckText:
    """How the reports name a check and what they tell a person to do about it."""

    title: str                 # a short human title; the id stays visible beside it
    remedy: str = ""           # what to do when it does not pass ("" when the rules file gives none)
    action: str = ""           # one of ACTIONS, "" when the rules file gives none

    @property
    def action_words(self) -> str:
        return ACTION_WORDS.get(self.action, "")


def _words_of(identifier: str) -> str:
    """An id without a title, in words: "tuning.pcie_max_payload_bytes" -> "tuning: pcie max payload bytes"."""
    head, _dot, tail = identifier.partition(".")
    return ("%s: %s" % (head, tail) if tail else head).replace("_", " ")


class IdPatterns(Generic[T]):
    """Values by check id or judge_checks pattern: "fleet.*" names every id under a prefix, "*.probe_status" the same
    check of every probe. An exact id wins, then the longest prefix, then a suffix; the first value added for a
    pattern wins (the user's rules file before the default one)."""

    def __init__(self) -> None:
        self.exact: Dict[str, T] = {}
        self.prefixes: List[Tuple[str, T]] = []
        self.suffixes: List[Tuple[str, T]] = []

    def add(self, identifier: str, value: T) -> None:
        if identifier.endswith(".*"):
            self.prefixes.append((identifier[:-1], value))
        elif identifier.startswith("*."):
            self.suffixes.append((identifier[1:], value))
        else:
            self.exact.setdefault(identifier, value)

    def find(self, check_id: str) -> Optional[Tuple[str, str, T]]:
        """("exact", "", value), ("prefix", the id after the prefix, value), ("suffix", the id before it, value) or None."""
        if check_id in self.exact:
            return "exact", "", self.exact[check_id]
        for prefix, value in sorted(self.prefixes, key=lambda item: -len(item[0])):
            if check_id.startswith(prefix) and len(check_id) > len(prefix):
                return "prefix", check_id[len(prefix):], value
        for suffix, value in self.suffixes:
            if check_id.endswith(suffix) and len(check_id) > len(suffix):
                return "suffix", check_id[:-len(suffix)], value
        return None


class CheckTexts:
    """Titles, remedies and actions of the rules, of the judge's own checks (judge_checks) and of metrics (titles).

    documents: rules documents, the first one winning (the user's rules file before the default one, whose
    judge_checks and titles then still name the judge's own checks). A rule without a title is titled by its
    description, without a remedy or action by nothing. metric_titles: {metric id: title}, the metric catalogue's.
    """

    def __init__(self, *documents: Any, metric_titles: Optional[Mapping[str, str]] = None) -> None:
        self.rules: Dict[str, CheckText] = {}
        self.judge_checks: IdPatterns[CheckText] = IdPatterns()
        # a metric's title is its catalogue entry's (probes/<probe>/metrics.py); a setting's, the documents' titles
        self.titles: Dict[str, str] = dict(metric_titles or {})
        for document in documents:
            for rule in rule_list(document):
                if not isinstance(rule, Mapping) or not isinstance(rule.get("id"), str) or rule["id"] in self.rules:
                    continue
                self.rules[rule["id"]] = self._text(rule, str(rule.get("description") or rule["id"]).strip())
            entries = document.get("judge_checks") if isinstance(document, Mapping) else None
            for entry in entries if isinstance(entries, list) else []:
                if not isinstance(entry, Mapping) or not isinstance(entry.get("id"), str):
                    continue
                self.judge_checks.add(entry["id"], self._text(entry, entry["id"]))
            titles = document.get("titles") if isinstance(document, Mapping) else None
            for key, title in (titles.items() if isinstance(titles, Mapping) else ()):
                if isinstance(title, str) and title.strip():
                    self.titles.setdefault(str(key), title.strip())

    @staticmethod
    def _text(entry: Mapping[str, Any], fallback: str) -> CheckText:
        def text(key: str) -> str:
            value = entry.get(key)
            return " ".join(value.split()) if isinstance(value, str) else ""
        action = text("action")
        return CheckText(title=text("title") or " ".join(fallback.split()), remedy=text("remedy"),
                         action=action if action in ACTIONS else "")

    def title_of(self, identifier: str) -> str:
        """A metric's or setting's title: its entry in titles, else its id in words."""
        return self.titles.get(identifier) or self.titles.get(identifier.split(".", 1)[-1]) or _words_of(identifier)

    def of(self, check_id: str) -> CheckText:
        """The text of a check id: its rule, its judge_checks entry, or a pattern's (fleet.<metric>: the metric's
        title with the pattern's); an id nothing names is its own words, with no remedy."""
        if check_id in self.rules:
            return self.rules[check_id]
        found = self.judge_checks.find(check_id)
        if found is None:
            return CheckText(_words_of(check_id))
        kind, rest, text = found
        if kind == "prefix":
            return CheckText("%s (%s)" % (self.title_of(rest), text.title), text.remedy, text.action)
        if kind == "suffix":
            return CheckText("%s %s" % (rest, text.title), text.remedy, text.action)
        return text
