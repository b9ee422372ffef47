# -*- coding: utf-8 -*-
# Copyright: gpufleet.validation contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The rules a run turned off or weakened, relative to the collection's shipped rules (docs/rules.yaml).

A rules file (gpufleet_rules_file) or a host's overrides (gpufleet_rule_overrides, per host or group) may disable a
shipped rule or downgrade it from fail to warn: the host can then pass without that rule's proof. Each such change is
one entry, named at run level (the fleet index, fleet.json's "weakened_rules", the console summary):

    {"rule": id, "probe": its probe, "change": "disabled" | "downgraded", "how": what was changed, in words,
     "by": the rules file or the override that did it, "hosts": [...], "groups": [groups all of whose hosts it covers]}
"""
from __future__ import annotations

import json
from typing import Any, Dict, List, Mapping, Optional, Sequence, Tuple

from .rules import effective_rules, normalize_rule, rule_list

CHANGES = ("disabled", "downgraded")
OVERRIDES_SOURCE = "gpufleet_rule_overrides"
SHIPPED_NAME = "docs/rules.yaml"
# A line names this many hosts, then how many more (fleet.json lists them all).
HOSTS_NAMED = 5


def _shipped_rules(shipped: Any) -> Dict[str, Dict[str, Any]]:
    """The shipped rules that judge something ({id: rule}): enabled, with their severity."""
    rules = [normalize_rule(rule) for rule in rule_list(shipped) if isinstance(rule, Mapping) and isinstance(rule.get("id"), str)]
    return {rule["id"]: rule for rule in rules if rule["enabled"]}


def _changes(shipped: Mapping[str, Dict[str, Any]], in_use: Mapping[str, Dict[str, Any]], sources: Mapping[str, str],
             rules_source: str) -> List[Tuple[str, str, str, str, str]]:
    """(rule, probe, change, how, by) of one host's rules (in_use: its effective rules by id) against the shipped ones."""
    found = []
    for rule_id, rule in sorted(shipped.items()):
        used = in_use.get(rule_id)
        if used is None:
            found.append((rule_id, rule["probe"], "disabled", "not in the rules file", rules_source))
            continue
        overridden = sources.get(rule_id) or OVERRIDES_SOURCE
        if not used["enabled"]:
            found.append((rule_id, rule["probe"], "disabled", "enabled: false",
                          overridden if "enabled" in used["overridden"] else rules_source))
        elif rule["severity"] == "fail" and used["severity"] == "warn":
            found.append((rule_id, rule["probe"], "downgraded", "severity warn where %s says fail" % SHIPPED_NAME,
                          overridden if "severity" in used["overridden"] else rules_source))
    return found


def weakened_rules(rules: Any, shipped: Any, hosts: Mapping[str, Mapping[str, Any]], rules_source: str = "") -> List[Dict[str, Any]]:
    """The shipped rules that the rules in use or the hosts' overrides disable or downgrade, one entry per change.

    rules: the rules document in use; shipped: the collection's (docs/rules.yaml); rules_source: how the rules in use
    are named ("rules file PATH"; "" when they are the shipped ones). hosts: {name: {"rule_overrides": {...}, "groups":
    [...], "rule_override_sources": {rule id: where that override came from}}} (an override without a source is
    gpufleet_rule_overrides). A rule that the rules file weakens and a host's override restores is not weakened there.
    """
    shipped_rules = _shipped_rules(shipped)
    source = rules_source or "the rules in use"
    hosts_of: Dict[Tuple[str, str, str, str, str], List[str]] = {}
    members: Dict[str, set] = {}
    # Most hosts share their overrides (none, or a group's): each distinct set is merged and compared once.
    known: Dict[str, List[Tuple[str, str, str, str, str]]] = {}
    for name in sorted(hosts, key=str):
        entry = hosts[name] or {}
        for group in entry.get("groups") or []:
            members.setdefault(str(group), set()).add(name)
        overrides = entry.get("rule_overrides") or None
        sources = entry.get("rule_override_sources")
        sources = sources if isinstance(sources, Mapping) else {}
        key = json.dumps([overrides, sources], sort_keys=True, default=repr)
        if key not in known:
            in_use = {rule["id"]: rule for rule in effective_rules(rules, overrides)[0]}
            known[key] = _changes(shipped_rules, in_use, sources, source)
        for change in known[key]:
            hosts_of.setdefault(change, []).append(name)
    found = []
    for (rule_id, probe, change, how, by), names in sorted(hosts_of.items()):
        covered = set(names)
        found.append({"rule": rule_id, "probe": probe, "change": change, "how": how, "by": by, "hosts": names,
                      "groups": sorted(group for group, hosts_in in members.items() if hosts_in <= covered)})
    return found


def weakened_on(entries: Sequence[Mapping[str, Any]], host: str) -> Dict[str, Mapping[str, Any]]:
    """{rule id: its entry} of the rules weakened on one host (a rule is disabled or downgraded there, never both)."""
    return {entry["rule"]: entry for entry in entries if host in entry["hosts"]}


def named_hosts(hosts: Sequence[str], limit: int = HOSTS_NAMED) -> str:
    """"a, b, c" or "a, b, c (+7 more)"."""
    shown = ", ".join(hosts[:limit])
    return shown + (" (+%d more)" % (len(hosts) - limit) if len(hosts) > limit else "")


def weakened_sentence(entry: Mapping[str, Any], total_hosts: Optional[int] = None) -> str:
    """One entry in words: "membw.bandwidth disabled (enabled: false) by gpufleet_rule_overrides on 4 of 4 hosts
    (groups rack_a): n1, n2, n3, n4"."""
    hosts = list(entry.get("hosts") or [])
    count = "%d of %d" % (len(hosts), total_hosts) if total_hosts is not None else str(len(hosts))
    groups = list(entry.get("groups") or [])
    return "%s %s (%s) by %s on %s host%s%s: %s" % (
        entry.get("rule"), entry.get("change"), entry.get("how"), entry.get("by"), count,
        "" if len(hosts) == 1 and total_hosts in (None, 1) else "s",
        " (group%s %s)" % ("s" if len(groups) > 1 else "", ", ".join(groups)) if groups else "", named_hosts(hosts))


def weakened_lines(entries: Sequence[Mapping[str, Any]], total_hosts: int, limit: int = 20) -> List[str]:
    """The console's lines: one per weakened rule, at most limit, then how many more the fleet index lists."""
    lines = ["rule weakened: %s" % weakened_sentence(entry, total_hosts) for entry in entries[:limit]]
    if len(entries) > limit:
        lines.append("rule weakened: %d more, listed in the fleet index and fleet.json (weakened_rules)" % (len(entries) - limit))
    return lines
