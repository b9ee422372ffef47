# -*- coding: utf-8 -*-
# Copyright: gpufleet.validation contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The rule overrides a stored run is judged with: its hosts' own (inputs.json) under those given now. Pure Python:
the report action and benchmarks/verdict_scorecard.py judge a run the same way."""
from __future__ import annotations

from collections.abc import Mapping


def judged_overrides(run, given):
    """Each host's rule overrides as its own run stored them (inputs.json), with the ones given now on top, rule by
    rule: a merge of slices or a re-judge months later judges a host as its run did unless told otherwise."""
    merged = dict(given)
    for host in run.hosts:
        stored = host.inputs.get("rule_overrides")
        if not isinstance(stored, Mapping) or not stored:
            continue
        now = given.get(host.name)
        merged[host.name] = dict(stored, **now) if isinstance(now, Mapping) else (now if now else dict(stored))
    return merged


def stored_override_sources(run, given):
    """{host: {rule id: where its override came from}} for the overrides judged_overrides takes from the run's own
    inputs.json rather than from the variables given now (judge/weakened_rules.py names them so)."""
    sources = {}
    for host in run.hosts:
        stored = host.inputs.get("rule_overrides")
        now = given.get(host.name)
        if isinstance(stored, Mapping) and stored and (not now or isinstance(now, Mapping)):
            sources[host.name] = {rule_id: "gpufleet_rule_overrides stored with the run (%s/inputs.json)" % host.dir_name
                                  for rule_id in stored if rule_id not in (now or {})}
    return sources
