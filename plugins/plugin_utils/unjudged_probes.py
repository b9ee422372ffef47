"""Refuse, before anything runs, rules that leave a probe of a host's profile judging nothing.

A probe whose shipped rules (docs/rules.yaml lists them) are all disabled for a host, by the rules file in use or by the host's
gpufleet_rule_overrides, would run and check nothing, and the host could pass without it. A probe that judges nothing
by declaration (ProbeRun.judges_nothing) is exempt; a downgrade to warn still judges, and the reports name it.
"""
from __future__ import annotations

import json
from collections.abc import Mapping

from .judge.rules import effective_rules, rule_list
from .judge.weakened_rules import named_hosts
from .probe_kit.registry import all_profiles, declarations

# The profile a host runs when it sets none: the playbooks' gpufleet_profile | default('quick').
DEFAULT_PROFILE = "quick"
OVERRIDES_VARIABLE = "gpufleet_rule_overrides"


def _enabled(rules, overrides=None) -> dict[str, set]:
    """{probe: its enabled rule ids} of the rules with the overrides merged over them."""
    found: dict[str, set] = {}
    for rule in effective_rules(rules, overrides)[0]:
        if rule["enabled"]:
            found.setdefault(rule["probe"], set()).add(rule["id"])
    return found


def _judged_probes(values: Mapping, shipped_probes: dict) -> tuple[str, list[str]]:
    """(the host's profile, its probes that the shipped rules judge and that judge something by declaration); no probes
    when the profile is unknown (another problem says so)."""
    profile = values.get("gpufleet_profile", DEFAULT_PROFILE)
    custom = values.get("gpufleet_profiles")
    profiles = all_profiles(custom if isinstance(custom, Mapping) else None)[0]
    if not isinstance(profile, str) or profile not in profiles:
        return str(profile), []
    found = declarations()
    return profile, [probe for probe in profiles[profile]
                     if probe in shipped_probes and not (probe in found and found[probe].judges_nothing)]


def unjudged_probe_problems(hosts: Mapping[str, Mapping], rules, shipped, rules_variable: str, rules_path: str | None) -> list[str]:
    """Problem sentences: per host and probe of its profile that the shipped rules judge, where no rule of that probe is
    enabled. hosts: {name: the variables it sets (gpufleet_profile, gpufleet_profiles, gpufleet_rule_overrides)}.
    rules: the rules in use (from rules_path given as rules_variable; None: the shipped ones). The rules file's own
    gaps are said once per probe and profile, naming their hosts; an override's per host."""
    rules = shipped if rules is None else rules
    shipped_probes = _enabled(shipped)
    in_use = _enabled(rules)
    problems = []
    by_file: dict[tuple[str, str], list[str]] = {}
    merged: dict[str, dict[str, set]] = {}
    for host in sorted(hosts, key=str):
        values = hosts[host]
        overrides = values.get(OVERRIDES_VARIABLE)
        overrides = overrides if isinstance(overrides, Mapping) else None
        profile, probes = _judged_probes(values, shipped_probes)
        if overrides:
            key = json.dumps(overrides, sort_keys=True, default=repr)  # hosts of a group share theirs: merged once
            if key not in merged:
                merged[key] = _enabled(rules, overrides)
            enabled = merged[key]
        else:
            enabled = in_use
        for probe in probes:
            if enabled.get(probe):
                continue
            if not in_use.get(probe):
                by_file.setdefault((probe, profile), []).append(host)
                continue
            problems.append("%s: %s leaves probe %s of profile %s with no enabled rule (it disables %s), so the probe would "
                            "run and judge nothing and the host could pass without it; keep at least one of them enabled "
                            "(severity warn still judges, and the reports name the downgrade)"
                            % (host, OVERRIDES_VARIABLE, probe, profile, ", ".join(sorted(in_use[probe]))))
    listed = {rule.get("id") for rule in rule_list(rules) if isinstance(rule, Mapping)}
    for (probe, profile), names in sorted(by_file.items()):
        missing = sorted(rule_id for rule_id in shipped_probes[probe] if rule_id not in listed)
        off = sorted(rule_id for rule_id in shipped_probes[probe] if rule_id in listed)
        said = ["%s missing from it" % ", ".join(missing)] * bool(missing) + ["%s disabled in it" % ", ".join(off)] * bool(off)
        problems.append("%s %s leaves probe %s of profile %s with no enabled rule for host(s) %s (the shipped rules of %s: %s), so "
                        "the probe would run and judge nothing and a host could pass without it; add or enable at least one "
                        "rule of probe %s" % (
                            rules_variable, rules_path, probe, profile, named_hosts(names, 10), probe, "; ".join(said), probe))
    return problems
