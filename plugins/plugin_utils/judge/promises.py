# -*- coding: utf-8 -*-
# Copyright: gpufleet.validation contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""What a pass proves: each headline a host's profile promises, proven or not, and why (docs/judge.md).

A profile promises the headline checks of the probes it runs (each probe declares its headlines, ProbeRun.headlines).
A headline is proven on a host when its rule is enabled at severity fail and every check it made there was judged
(pass, warn or fail) against a reference that is not the fleet median standing in for a missing known-good value. Any
other outcome (a skip, an error, no check at all, a disabled or downgraded rule) leaves it not proven, with the reason
and what to do; a headline the host cannot have (a probe between GPUs on a host with one, a dtype its SKU's datasheet
does not offer) is not promised there. Pure Python.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, FrozenSet, List, Mapping, Optional, Sequence

from ...module_utils.envelope_statuses import MEASURED_STATUSES
from .model import Check, Proof
from .not_compared import NO_KNOWN_GOOD, PEERS_ONLY_SOURCE

JUDGED_STATUSES = ("pass", "warn", "fail")
# The severity a promised headline's rule must keep: at warn a failing value cannot fail the host.
PROMISED_SEVERITY = "fail"


@dataclass(frozen=True)
class Promise:
    """One headline a host's profile promises: its rule id, the probe that measures it, what it needs to apply."""

    rule: str
    probe: str
    min_gpus: int = 1
    needs_datasheet: str = ""


@dataclass
class HostFacts:
    """What the promises of one host are weighed against, besides its checks."""

    gpu_count: Optional[int] = None      # the GPUs the host has (expected, else visible); None: unknown
    gpu_count_source: str = ""
    sku: Optional[str] = None
    sku_reason: str = ""
    # what the SKU's baseline datasheet offers (its keys: "bf16_dense", "fp8_dense", ...); None where no baseline is known
    datasheet: Optional[FrozenSet[str]] = None
    # {probe: {"status": ..., "reason": ...}} of the results the host left in this run
    outcomes: Optional[Mapping[str, Any]] = None
    # the check that says this host is no GPU host at all (host.gpu_measured, action check_inventory): every headline
    # its checks and results leave unproven follows from it
    not_a_gpu_host: Optional[Check] = None


def _not_applicable(promise: Promise, facts: HostFacts, own: Sequence[Check]) -> str:
    if promise.min_gpus > 1 and facts.gpu_count is not None and facts.gpu_count < promise.min_gpus:
        return "measured between GPUs: this host has %d GPU%s (%s), at least %d needed" % (
            facts.gpu_count, "" if facts.gpu_count == 1 else "s", facts.gpu_count_source or "as found", promise.min_gpus)
    # A dtype the probe measured on this GPU is promised whatever a baseline's datasheet lists: a user's baseline that
    # leaves fp8_dense out must not waive the fp8 headlines of a GPU that computes fp8.
    measured = any(check.value is not None for check in own)
    if promise.needs_datasheet and facts.datasheet is not None and not measured and promise.needs_datasheet not in facts.datasheet:
        return "SKU %s's datasheet offers no %s (baselines/%s.yaml has no datasheet.%s)" % (
            facts.sku, promise.needs_datasheet, facts.sku, promise.needs_datasheet)
    return ""


def _rule_problem(promise: Promise, rule: Optional[Mapping[str, Any]]) -> Optional[Proof]:
    if rule is None:
        return Proof(promise.rule, promise.probe, "not_proven", "the rules in use have no rule %s" % promise.rule,
                     "restore rule %s (the collection's docs/rules.yaml has it)" % promise.rule)
    overridden = rule.get("overridden") or []
    if not rule.get("enabled", True):
        by = "by this host's rule overrides (gpufleet_rule_overrides)" if "enabled" in overridden else "in the rules file in use"
        return Proof(promise.rule, promise.probe, "not_proven", "rule %s is disabled %s" % (promise.rule, by),
                     "enable rule %s again, or run a profile that does not promise it" % promise.rule)
    if rule.get("severity") != PROMISED_SEVERITY:
        by = "by this host's rule overrides (gpufleet_rule_overrides)" if "severity" in overridden else "in the rules file in use"
        return Proof(promise.rule, promise.probe, "not_proven", "rule %s's severity is %s %s, so a value below its "
                     "threshold cannot fail this host" % (promise.rule, rule.get("severity"), by),
                     "give rule %s severity %s again" % (promise.rule, PROMISED_SEVERITY))
    return None


def _absent(promise: Promise, facts: HostFacts) -> Proof:
    outcome = (facts.outcomes or {}).get(promise.probe)
    if outcome is None:
        return Proof(promise.rule, promise.probe, "not_proven", "the %s probe left no result on this host in this run" % promise.probe,
                     "run the %s probe on this host (the run's log says why it did not end with a result)" % promise.probe)
    status = outcome.get("status") if isinstance(outcome, Mapping) else None
    reason = (outcome.get("reason") if isinstance(outcome, Mapping) else None) or "no reason given"
    if status not in MEASURED_STATUSES:
        return Proof(promise.rule, promise.probe, "not_proven", "the %s probe ended %s: %s" % (promise.probe, status, reason),
                     "see %s.probe_status: provide or repair what it names, then run again" % promise.probe)
    return Proof(promise.rule, promise.probe, "not_proven", "the %s result holds nothing rule %s could judge" % (promise.probe, promise.rule),
                 "run the %s probe of this collection's version again" % promise.probe)


def _see_root(root: str) -> str:
    return "see %s, the root cause" % root


def _unjudged_fix(check: Check, facts: HostFacts, root: Optional[Check]) -> str:
    if root is not None:
        return root.remedy or _see_root(root.id)
    if check.reference_source.startswith(PEERS_ONLY_SOURCE) or NO_KNOWN_GOOD in check.reason:
        if facts.sku is None:
            return ("identify the GPU (%s): write its baseline, or calibrate one from a stored run of healthy hosts "
                    "(playbooks/calibrate.yml, docs/judge.md)" % (facts.sku_reason or "its SKU is unknown"))
        return ("give SKU %s a known-good value for it (known_good in baselines/%s.yaml, or calibrate one from a stored run "
                "of healthy hosts: playbooks/calibrate.yml, docs/judge.md)" % (facts.sku, facts.sku))
    if check.status == "error":
        return check.remedy or "see the check's reason, repair it, then run again"
    return check.remedy or "see the check's reason"


def prove(promise: Promise, checks: Sequence[Check], rules: Mapping[str, Mapping[str, Any]], facts: HostFacts) -> Proof:
    """The proof of one promised headline on one host from its checks (after folding) and its effective rules."""
    own = [check for check in checks if check.id == promise.rule]
    waived = _not_applicable(promise, facts, own)
    if waived:
        return Proof(promise.rule, promise.probe, "not_promised", waived)
    problem = _rule_problem(promise, rules.get(promise.rule))
    if problem is not None:
        return problem
    proof = _proof_from_checks(promise, checks, own, facts)
    root = facts.not_a_gpu_host
    if proof.state == "not_proven" and root is not None and not proof.root:
        proof.root, proof.fix = root.id, _see_root(root.id)
    return proof


def _proof_from_checks(promise: Promise, checks: Sequence[Check], own: Sequence[Check], facts: HostFacts) -> Proof:
    if not own:
        return _absent(promise, facts)
    by_id = {check.id: check for check in checks}
    for check in own:
        peers_only = check.reference_source.startswith(PEERS_ONLY_SOURCE)
        if check.status in JUDGED_STATUSES and not peers_only:
            continue
        root = by_id.get(check.because) if check.because else None
        # the root cause's own words are the verdict's first reason and its row: the fix points there
        because = check.reason
        if peers_only and check.status in JUDGED_STATUSES:
            because += " (held against the fleet median only: no known-good value)"
        return Proof(promise.rule, promise.probe, "not_proven", because, _unjudged_fix(check, facts, root), root.id if root else "")
    sources = sorted(set(check.reference_source for check in own if check.reference_source))
    return Proof(promise.rule, promise.probe, "proven", "%d check%s judged%s" % (
        len(own), "" if len(own) == 1 else "s", " against %s" % "; ".join(sources) if sources else ""))


def prove_all(promises: Sequence[Promise], checks: Sequence[Check], rules: Sequence[Mapping[str, Any]],
              facts: HostFacts) -> List[Proof]:
    """Every promise of one host, in the order promised."""
    by_id = {rule["id"]: rule for rule in rules if isinstance(rule, Mapping) and "id" in rule}
    return [prove(promise, checks, by_id, facts) for promise in promises]


def unproven_lines(proofs: Sequence[Proof], roots_said: Sequence[str] = ()) -> List[str]:
    """The verdict's reasons for the promises not proven: one line per cause, naming every headline it left unproven
    ("not proven: health.cuda_init, health.gpu_count: the health probe ended unavailable: ...; to fix: ...").

    A headline that follows from a root cause the verdict already says (roots_said: a busy GPU's health.gpu_processes)
    is grouped under that root, not repeated with its own measured words (those stay in its proof)."""
    causes: dict = {}
    for proof in proofs:
        if proof.state != "not_proven":
            continue
        because, fix = proof.because, proof.fix
        if proof.root and proof.root in roots_said:
            because = "each follows from %s, the root cause above" % proof.root
            fix = "" if fix == _see_root(proof.root) else fix
        causes.setdefault((because, fix), []).append(proof.check)
    return ["not proven: %s: %s%s" % (", ".join(checks), because, "; to fix: %s" % fix if fix else "")
            for (because, fix), checks in causes.items()]
