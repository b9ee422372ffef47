# -*- coding: utf-8 -*-
# Copyright: gpufleet.validation contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The fleet judgement: every rule on every host, peers compared by SKU, drift against each host's previous run."""
from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import Any, Callable, Dict, Iterable, List, Mapping, Optional, Sequence, Set, Tuple

from ...module_utils.envelope_statuses import FAILED_STATUSES, MEASURED_STATUSES
from .catalogue import ProbeCatalogue
from ..report.number_format import format_number, format_quantity
from ..result_fields import dig
from ..unreadable_result import UNREADABLE_VALUE, is_stand_in
from .busy import busy_checks, settle_busy
from .causes import Causes, consequences_of, fold_consequences, root_causes
from .check_helpers import gpu_label, param_source
from .clock_skew import clock_skew_checks
from .identity_checks import MOVED_CHECK_ID, gpu_identities, moved_gpu_checks, same_gpu_checks
from .machine_facts import ExpectedGpus, MachineFacts
from .metrics import Metric
from .settings import Setting, fleet_minorities, minority_checks, settings_drift, settings_not_compared
from .slow_probes import durations, slow_probes
from .model import Check, FleetJudgement, HostVerdict, error_verdict, worst_verdict
from .not_compared import mark_not_compared
from .promises import HostFacts, Promise, prove_all, unproven_lines
from .not_run import not_run_check
from .rules import RuleContext, cap_status, effective_rules, rule_list
from .sku import identify_host, unknown_group
from .stats import coefficient_of_variation, finite_numbers, mad, median, outlier_decision, relative_change

# A host check: a severity-fail rule whose field path no host's result holds (docs/judge.md, "Rules that match nothing").
UNMATCHED_FAIL_RULE = "rules.unmatched_fail_rule"
DEFAULT_SETTINGS: Dict[str, Any] = {
    "outlier_threshold": 3.5,      # |robust z| above this is an outlier
    "relative_tolerance": 0.10,    # with MAD 0: a value this far (relative) from the median is an outlier
    "noise_floor": 0.05,           # a deviation within this fraction of the median is never an outlier
    "min_peers": 3,                # values needed (the host's own included) before comparing
    # relative change since the previous run that counts as drift, for a metric the catalogue does not declare (a
    # declared metric's own drift_tolerance wins; None there: not compared between runs)
    "drift_tolerance": 0.10,
}
# The reason of drift.previous_run when the host has no earlier run; the dossier says it too when nothing was compared.
NO_EARLIER_RUN = "no earlier run of this host measured anything to compare with"
STATUS_ORDER = {"fail": 0, "error": 1, "warn": 2}


def _data(envelope: Any) -> Optional[Dict[str, Any]]:
    if isinstance(envelope, Mapping) and envelope.get("status") in MEASURED_STATUSES and isinstance(envelope.get("data"), dict):
        return envelope["data"]
    return None


def _unmeasured_data(envelope: Any) -> Optional[Dict[str, Any]]:
    """The data of a probe that ran but found its subject absent (status unavailable): the probe that describes the
    machine may still say what it has, without a driver."""
    if isinstance(envelope, Mapping) and envelope.get("status") == "unavailable" and isinstance(envelope.get("data"), dict):
        return envelope["data"]
    return None


def _host_check(check_id: str, host: str, probe: str, status: str, reason: str, **fields: Any) -> Check:
    return Check(id=check_id, host=host, probe=probe, status=status, reason=reason, **fields)


def expected_gpus_override(rules: List[Dict[str, Any]], check: str) -> Optional[Tuple[int, str]]:
    """(count, source) where the host's rules set params.expected of the rule of that check (the one the machine's
    probe names: an inventory override)."""
    for rule in rules:
        if rule["check"] == check and rule["enabled"] and rule["params"].get("expected") is not None:
            return rule["params"]["expected"], param_source(rule, "expected")
    return None


def envelope_checks(host: str, probe: str, envelope: Mapping[str, Any], shape: ExpectedGpus,
                    facts: Optional[MachineFacts], catalogue: ProbeCatalogue) -> List[Check]:
    """One check for a probe whose envelope is not ok: error/timeout/unreachable -> error; unavailable -> fail/warn/skip.
    A stored result that could not be read (its stand-in, unreadable_result.py) is an error with what is wrong with it."""
    status = envelope.get("status")
    reason = envelope.get("reason") or "no reason given"
    check_id = "%s.probe_status" % probe
    if is_stand_in(envelope):
        return [_host_check(check_id, host, probe, "error", "the %s result cannot be judged: %s" % (probe, reason), value=UNREADABLE_VALUE)]
    if status in FAILED_STATUSES:
        return [_host_check(check_id, host, probe, "error", "the %s probe ended with status %s: %s" % (probe, status, reason), value=status)]
    if status == "partial":
        data = envelope.get("data") if isinstance(envelope.get("data"), dict) else {}
        sections = ", ".join("%s (%s)" % (entry.get("section"), entry.get("error")) for entry in data.get("errors") or [])
        return [_host_check(check_id, host, probe, "warn", "the %s probe is partial: %s%s" % (
            probe, reason, "; sections that failed: %s" % sections if sections else ""), value=status)]
    if status == "unavailable":
        return [_unavailable_check(host, probe, reason, shape, envelope, catalogue, facts.gpu_count if facts is not None else None)]
    if status != "ok":
        return [_host_check(check_id, host, probe, "error", "the %s probe returned an unknown status %r: %s" % (probe, status, reason),
                            value=status)]
    if facts is None and catalogue.describes_machine(probe):
        return [_host_check(check_id, host, probe, "error", "the %s envelope has no data" % probe, value=status)]
    return []


MISSING_PART_REMEDY = "Provide what the reason names (the NVIDIA driver, nvidia-ml-py or torch for the probes' Python, a file or " \
    "parameter the probe needs), then re-run."


def _unavailable_check(host: str, probe: str, reason: str, shape: ExpectedGpus, envelope: Mapping[str, Any],
                       catalogue: ProbeCatalogue, visible: Optional[int] = None) -> Check:
    """A probe that could not run because what it measures is absent: skip where the host should not have it (too few
    GPUs, none at all), warn for a probe that judges nothing, fail where the host should have the GPUs it needs."""
    check_id = "%s.probe_status" % probe
    expected, source = shape.count, shape.source
    nodes = dig(envelope.get("data") or {}, "device_nodes", "gpu_node_count")
    needed = catalogue.min_gpus.get(probe, 1)
    fields: Dict[str, Any] = {"value": "unavailable"}
    counted = dict(fields, reference=expected, reference_source=source) if expected is not None else fields
    if expected is not None and expected >= needed and visible is not None and visible < needed and needed > 1:
        # the missing GPUs are the machine probe's checks' finding (gpus_on_bus, gpus_on_board, gpu_count): not a second row
        return _host_check(check_id, host, probe, "skip", "the %s probe needs at least %d GPUs and only %d of the %d this host "
                           "should have (%s) %s visible: the %s checks say why the others are missing; %s" % (
                               probe, needed, visible, expected, source, "is" if visible == 1 else "are",
                               catalogue.machine_probe, reason), **counted)
    if expected is not None and expected < needed:
        if expected == 0:
            words = "the %s probe could not run here, and none is expected: %s: %s" % (probe, source, reason)
        else:
            words = "the %s probe needs at least %d GPUs and this host should have %d (%s): %s" % (probe, needed, expected, source, reason)
        return _host_check(check_id, host, probe, "skip", words, **counted)
    if probe in catalogue.judges_nothing:
        check = _host_check(check_id, host, probe, "warn", "the %s probe could not run: %s (it judges nothing, so the GPUs are not "
                            "failed for it)" % (probe, reason), **fields)
    elif expected:
        check = _host_check(check_id, host, probe, "fail", "the %s probe could not run although this host should have %d GPUs (%s): %s"
                            % (probe, expected, source, reason), **counted)
    elif isinstance(nodes, int) and nodes > 0:
        check = _host_check(check_id, host, probe, "warn", "the %s probe could not run although the host has %d /dev/nvidiaN "
                            "device nodes: %s" % (probe, nodes, reason), **fields)
    else:
        return _host_check(check_id, host, probe, "skip", "the %s probe could not run here, and nothing says this host should have "
                           "a GPU: %s" % (probe, reason), **fields)
    check.action, check.remedy = "fix_config", MISSING_PART_REMEDY
    return check


class _RuleTally:
    """Which rules matched something somewhere, to report the ones that matched nothing."""

    def __init__(self, rules: Optional[Dict[str, Dict[str, Any]]] = None) -> None:
        self.matched: Dict[str, int] = {}
        self.probe_ran: Dict[str, int] = {}
        self.no_function: Dict[str, str] = {}
        self.rules: Dict[str, Dict[str, Any]] = dict(rules or {})
        self.empty_hosts: Dict[str, List[str]] = {}

    def one_hosts(self) -> "_RuleTally":
        """A tally for one host's rules, to be merged back (merge) in host order: what judging a host sends back."""
        return _RuleTally(self.rules)

    def added_since(self, base: "_RuleTally") -> "_RuleTally":
        """This host tally without the rules ``base`` already had (they need not travel back from a worker)."""
        added = _RuleTally()
        added.matched, added.probe_ran, added.no_function = self.matched, self.probe_ran, self.no_function
        added.empty_hosts = self.empty_hosts
        added.rules = {rule_id: rule for rule_id, rule in self.rules.items() if rule_id not in base.rules}
        return added

    def merge(self, host: "_RuleTally") -> None:
        for rule_id, count in host.matched.items():
            self.matched[rule_id] = self.matched.get(rule_id, 0) + count
        for rule_id, count in host.probe_ran.items():
            self.probe_ran[rule_id] = self.probe_ran.get(rule_id, 0) + count
        self.no_function.update(host.no_function)
        for rule_id, rule in host.rules.items():
            self.rules.setdefault(rule_id, rule)
        for rule_id, names in host.empty_hosts.items():
            self.empty_hosts.setdefault(rule_id, []).extend(names)


def _run_rules(host: str, envelopes: Mapping[str, Any], rules: List[Dict[str, Any]], context: RuleContext,
               catalogue: ProbeCatalogue, tally: _RuleTally) -> List[Check]:
    checks: List[Check] = []
    for rule in rules:
        tally.rules.setdefault(rule["id"], rule)
        if not rule["enabled"]:
            why = "by this host's rule overrides" if "enabled" in rule["overridden"] else "in the rules"
            checks.append(_host_check(rule["id"], host, rule["probe"], "skip", "rule disabled %s" % why))
            tally.matched[rule["id"]] = tally.matched.get(rule["id"], 0) + 1
            continue
        data = _data(envelopes.get(rule["probe"]))
        if data is None:
            continue
        tally.probe_ran[rule["id"]] = tally.probe_ran.get(rule["id"], 0) + 1
        function = catalogue.checks.get(rule["probe"], {}).get(rule["check"])
        if function is None:
            tally.no_function[rule["id"]] = rule["check"]
            continue
        context.envelope = envelopes[rule["probe"]]
        try:
            found = function(host, data, rule, context)
        except Exception as exc:  # pylint: disable=broad-exception-caught
            found = [_host_check(rule["id"], host, rule["probe"], "error", "the check %s raised %s: %s (a judge bug; the data is kept)"
                                 % (rule["check"], type(exc).__name__, exc))]
        if not found:
            tally.empty_hosts.setdefault(rule["id"], []).append(host)
            continue
        tally.matched[rule["id"]] = tally.matched.get(rule["id"], 0) + 1
        for check in found:
            check.id, check.probe = rule["id"], rule["probe"]
            check.status = cap_status(check.status, rule["severity"])
            if rule["overridden"] and "override" not in check.reference_source:
                check.threshold = (check.threshold + " " if check.threshold else "") + "(rule overridden for this host: %s)" % (
                    ", ".join(rule["overridden"]))
        checks.extend(found)
    return checks


def _gpu_groups(facts: Optional[MachineFacts], per_gpu: List[Tuple[Optional[str], str]]) -> Dict[str, str]:
    groups: Dict[str, str] = {}
    if facts is None or facts.gpus is None:
        return groups
    for gpu, (sku, unused_sentence) in zip(facts.gpus, per_gpu):
        if gpu.uuid is not None:
            groups[gpu.uuid] = sku or unknown_group(gpu.name)
    return groups


def _host_group(sku: Optional[str], groups: Dict[str, str]) -> str:
    if sku:
        return sku
    names = sorted(set(groups.values()))
    return names[0] if len(names) == 1 else "unknown"


def _worse(better: str, change: float) -> bool:
    return better == "none" or (better == "higher" and change < 0) or (better == "lower" and change > 0)


def _drift_tolerance(metric_id: str, catalogue: ProbeCatalogue, settings: Mapping[str, Any]) -> Optional[float]:
    """The metric's drift tolerance from its catalogue entry (None: not compared between runs), else the default."""
    spec = catalogue.metric_spec(metric_id)
    return settings["drift_tolerance"] if spec is None else spec.drift_tolerance


def _metric_drift(host: str, probe: str, samples: List[Metric], earlier_samples: List[Metric], earlier_run: str,
                  settings: Dict[str, Any], catalogue: ProbeCatalogue) -> List[Check]:
    before = {(sample.metric_id, sample.gpu_uuid): sample for sample in earlier_samples}
    checks = []
    for sample in samples:
        old = before.get((sample.metric_id, sample.gpu_uuid))
        tolerance = _drift_tolerance(sample.metric_id, catalogue, settings)
        if old is None or tolerance is None:
            continue
        change = relative_change(old.value, sample.value)
        label = "%s: " % gpu_label({"index": sample.gpu_index, "uuid": sample.gpu_uuid}) if sample.gpu_uuid else ""
        fields = {"gpu_uuid": sample.gpu_uuid, "gpu_index": sample.gpu_index, "value": sample.value, "unit": sample.unit,
                  "reference": old.value, "reference_source": "run %s" % earlier_run, "threshold": "change <= %g %%" % (tolerance * 100)}
        check_id = "drift.%s" % sample.metric_id
        if change is None:
            drifted = sample.value != old.value and _worse(sample.better, sample.value - old.value)
            words = "%s%s %s -> %s since run %s" % (label, sample.metric_id, format_number(old.value),
                                                    format_quantity(sample.value, sample.unit), earlier_run)
        else:
            drifted = abs(change) > tolerance and _worse(sample.better, change)
            words = "%s%s %s -> %s (%s) since run %s" % (
                label, sample.metric_id, format_number(old.value), format_quantity(sample.value, sample.unit),
                format_quantity(change * 100, "%", signed=True), earlier_run)
        checks.append(_host_check(check_id, host, probe, "warn" if drifted else "pass",
                                  words + ("; beyond the %g %% noise allowance" % (tolerance * 100) if drifted else ""), **fields))
    return checks


def _fleet_checks(samples: List[Tuple[str, str, str, Metric]], settings: Dict[str, Any]
                  ) -> Tuple[Dict[str, List[Check]], Dict[str, Dict[str, Dict[str, Any]]]]:
    """samples: (host, probe, group, metric). Returns (checks per host, fleet_statistics)."""
    populations: Dict[Tuple[str, str], List[Tuple[str, str, Metric]]] = {}
    for host, probe, group, metric in samples:
        populations.setdefault((group, metric.metric_id), []).append((host, probe, metric))
    checks: Dict[str, List[Check]] = {}
    statistics: Dict[str, Dict[str, Dict[str, Any]]] = {}
    for (group, metric_id), members in sorted(populations.items()):
        values = [metric.value for unused_host, unused_probe, metric in members]
        hosts = sorted(set(host for host, unused_probe, unused_metric in members))
        center, spread = median(values), mad(values)
        finite_count = len(finite_numbers(values))
        unit = members[0][2].unit
        statistics.setdefault(group, {})[metric_id] = {"median": center, "mad": spread, "count": len(values), "hosts": len(hosts),
                                                       "unit": unit, "cv": coefficient_of_variation(values)}
        reported_short = set()
        for host, probe, metric in members:
            result = outlier_decision(metric.value, finite_count, center, spread, settings["outlier_threshold"],
                                      settings["relative_tolerance"], settings["min_peers"], settings["noise_floor"])
            check_id = "fleet.%s" % metric_id
            if result.outlier is None:
                if host not in reported_short:
                    reported_short.add(host)
                    checks.setdefault(host, []).append(_host_check(check_id, host, probe, "skip", "%s not compared across the fleet (group %s): "
                                                                   "%s" % (metric_id, group, result.reason), unit=unit))
                continue
            deviation = metric.value - center
            flagged = result.outlier and _worse(metric.better, deviation)
            label = "%s: " % gpu_label({"index": metric.gpu_index, "uuid": metric.gpu_uuid}) if metric.gpu_uuid else ""
            words = "%s%s %s against the fleet median %s of %s (MAD %s, %d values from %d hosts): %s" % (
                label, metric_id, format_quantity(metric.value, unit), format_quantity(center, unit), group,
                format_number(spread), len(values), len(hosts), result.reason)
            if result.outlier and not flagged:
                words += " (in the good direction)"
            checks.setdefault(host, []).append(_host_check(
                check_id, host, probe, "warn" if flagged else "pass", words, gpu_uuid=metric.gpu_uuid, gpu_index=metric.gpu_index,
                value=metric.value, unit=unit, reference=center,
                reference_source="fleet median of %s (MAD %s, count %d)" % (group, format_number(spread), len(values)),
                threshold="|robust z| <= %g" % settings["outlier_threshold"]))
    return checks, statistics


def _unmatched_fail_rule_hosts(rule: Mapping[str, Any], empty_hosts: List[str]) -> List[str]:
    """The hosts a severity-fail rule with a field path (params.path) failed to read on, where it read nothing anywhere.

    Only such rules: a path that exists on no host where the probe ran is a mistyped rule, while a check function that
    finds nothing (gemm's fp8 rules where the run did not ask for fp8) or a probe that did not run is no fault."""
    params = rule.get("params") if isinstance(rule.get("params"), Mapping) else {}
    if rule.get("severity") != "fail" or not isinstance(params.get("path"), str):
        return []
    return sorted(set(empty_hosts))


def _unmatched(tally: _RuleTally, reached_hosts: List[str]) -> Tuple[List[Check], Dict[str, List[Check]]]:
    unmatched: List[Check] = []
    per_host: Dict[str, List[Check]] = {}
    for rule_id, rule in sorted(tally.rules.items()):
        if tally.matched.get(rule_id):
            for host in tally.empty_hosts.get(rule_id, []):
                per_host.setdefault(host, []).append(_host_check(rule_id, host, rule["probe"], "skip", "rule %s found nothing to read in "
                                                                 "this host's %s data (it did on other hosts)" % (rule_id, rule["probe"])))
            continue
        if rule_id in tally.no_function:
            words, status = ("rule %s names the check %r, which no %s check function provides, so it checked nothing"
                             % (rule_id, rule["check"], rule["probe"]), "warn")
        elif tally.probe_ran.get(rule_id):
            words = ("the %s probe gave data on %d host(s) but rule %s (check %s) found no field to read there, so it checked "
                     "nothing: its check or params match nothing in the data" % (rule["probe"], tally.probe_ran[rule_id], rule_id, rule["check"]))
            status = "warn"
            for host in _unmatched_fail_rule_hosts(rule, tally.empty_hosts.get(rule_id, [])):
                per_host.setdefault(host, []).append(_host_check(
                    UNMATCHED_FAIL_RULE, host, rule["probe"], "fail", "rule %s (severity fail) reads %s of the %s data, which no host's "
                    "result holds, so it checked nothing and cannot vouch for this host: correct the path in the rules file"
                    % (rule_id, rule["params"]["path"], rule["probe"]), value=rule["params"]["path"], threshold="the field exists"))
        else:
            words, status = ("the %s probe gave no data on any host (%d reached), so rule %s checked nothing"
                             % (rule["probe"], len(reached_hosts), rule_id), "skip")
        unmatched.append(Check(id=rule_id, host="", probe=rule["probe"], status=status, reason=words))
    return unmatched, per_host


def _why_no_gpu(envelopes: Mapping[str, Any], first: str = "") -> str:
    """The first two probes' reasons for not being ok: first's first (the probe that describes the machine, which looks
    for the GPUs)."""
    reasons = []
    for probe in sorted(envelopes, key=lambda name: (name != first, name)):
        envelope = envelopes.get(probe)
        if isinstance(envelope, Mapping) and envelope.get("status") != "ok" and envelope.get("reason"):
            reasons.append("%s: %s" % (probe, envelope["reason"]))
    return "; ".join(reasons[:2]) if reasons else "no probe measured a GPU (every GPU check was skipped)"


GPU_MEASURED_CHECK_ID = "host.gpu_measured"
NO_GPU_ACTION = "check_inventory"
NO_GPU_REMEDY = ("This host is not a GPU host, so nothing here was validated and nothing needs repair: take it out of the "
                 "inventory of GPU hosts. If it should have a GPU, seat it (bare metal) or pass it through to this virtual "
                 "machine.")


def gpu_measured_check(host: str, checks: List[Check], envelopes: Mapping[str, Any], expected: Optional[int],
                       expected_source: str, first: str = "") -> Optional[Check]:
    """None when some check judged a GPU, or when a failing or undecided check already keeps the host out; else why no
    GPU was measured: fail where the host should have GPUs, warn otherwise (a host without a GPU is not a validated GPU
    host, and acceptance refuses it)."""
    if not envelopes or any(check.status in ("fail", "error") for check in checks):
        return None
    if any(check.gpu_uuid and check.status in ("pass", "warn") for check in checks):
        return None
    why = _why_no_gpu(envelopes, first)
    if expected:
        return _host_check(GPU_MEASURED_CHECK_ID, host, "", "fail", "no GPU was measured although this host should have %d (%s): %s"
                           % (expected, expected_source, why), value=0, unit="GPUs", reference=expected,
                           reference_source=expected_source, threshold=">= 1 GPU measured")
    if expected == 0:
        check = _host_check(GPU_MEASURED_CHECK_ID, host, "", "warn", "%s, so nothing here was validated as a GPU host" % expected_source,
                            value=0, unit="GPUs", reference_source=expected_source, threshold=">= 1 GPU measured")
        check.action, check.remedy = NO_GPU_ACTION, NO_GPU_REMEDY
        return check
    return _host_check(GPU_MEASURED_CHECK_ID, host, "", "warn", "no GPU was measured on this host and nothing says it should have one, "
                       "so it was not validated as a GPU host: %s" % why, value=0, unit="GPUs", threshold=">= 1 GPU measured")


def reason_line(check: Check, checks: List[Check]) -> str:
    """A root cause's line in the verdict's reasons, naming the checks that follow from it."""
    following = sorted(set(found.id for found in consequences_of(check, checks)))
    return "%s: %s%s" % (check.id, check.reason, " (+%d check%s that follow from it: %s)" % (
        len(following), "" if len(following) == 1 else "s", ", ".join(following)) if following else "")


def _verdict(host: str, checks: List[Check], sku: Optional[str], sku_reason: str, groups: List[str],
             causes: Optional[Causes] = None, independent: Iterable[str] = (), promised: Optional["_Promised"] = None) -> HostVerdict:
    statuses = [check.status for check in checks]
    verdict = worst_verdict(statuses)
    if causes is not None:
        settle_busy(checks, causes.of)
        fold_consequences(checks, causes, independent)
    bad = [check for check in root_causes(checks) if check.status in STATUS_ORDER]
    bad.sort(key=lambda check: STATUS_ORDER[check.status])
    reasons = [reason_line(check, checks) for check in bad]
    if not any(status in ("pass", "warn", "fail", "error") for status in statuses):
        # Nothing was held against anything: that is not a pass.
        verdict = "warn"
        skipped = "; ".join("%s: %s" % (check.id, check.reason) for check in checks[:3])
        if len(checks) > 3:
            skipped += "; and %d more" % (len(checks) - 3)
        nothing = _host_check("host.nothing_checked", host, "", "warn", "every check was skipped, so nothing on this host was "
                              "validated%s" % ((" (" + skipped + ")") if skipped else ""))
        checks = [nothing] + checks
        reasons = ["%s: %s" % (nothing.id, nothing.reason)]
    if promised is not None:
        promised.facts.not_a_gpu_host = next((check for check in checks if check.id == GPU_MEASURED_CHECK_ID
                                              and check.action == NO_GPU_ACTION), None)
    proofs = prove_all(promised.promises, checks, promised.rules, promised.facts) if promised is not None else []
    unproven = [proof for proof in proofs if proof.state == "not_proven"]
    # results that may be another host's prove nothing about this one
    moved = any(check.id == MOVED_CHECK_ID and check.status == "warn" for check in checks)
    if (moved or unproven) and verdict in ("pass", "warn"):
        verdict = "not_validated"
    if unproven and verdict == "not_validated":
        # what left the promises unproven first: the root cause they follow from (a busy GPU), then each of them
        roots = [root for root in dict.fromkeys(proof.root for proof in unproven) if root]
        first = [line for line in reasons if line.split(":", 1)[0] in roots]
        said = [line.split(":", 1)[0] for line in first]
        reasons = first + unproven_lines(unproven, said) + [line for line in reasons if line not in first]
    if moved:
        reasons = sorted(reasons, key=lambda line: not line.startswith(MOVED_CHECK_ID + ":"))
    return HostVerdict(host=host, verdict=verdict, reasons=reasons, checks=checks, sku=sku, sku_reason=sku_reason, groups=list(groups),
                       proofs=proofs)


@dataclass
class _Promised:
    """What a host's profile promises and what its proofs are weighed against (judge/promises.py)."""

    promises: List[Promise]
    rules: List[Dict[str, Any]]
    facts: HostFacts


@dataclass
class _HostJudgement:
    """One reached host's checks before the fleet comparison, and what its verdict needs."""

    checks: List[Check]
    sku: Optional[str]
    sku_reason: str
    expected_gpus: Optional[int]
    expected_gpus_source: str
    samples: List[Tuple[str, str, str, Metric]]
    group: str = "unknown"
    settings: List[Setting] = field(default_factory=list)
    # {probe: its envelope's status and reason}: what gpu_measured_check reads, kept instead of the envelopes
    outcomes: Dict[str, Any] = field(default_factory=dict)
    # the GPUs it reports, by UUID and serial (identity_checks.gpu_identities)
    gpu_identities: Set[str] = field(default_factory=set)
    # its profile's promises with its rules and facts; None where the caller promised nothing
    promised: Optional[_Promised] = None
    # {probe: seconds} its probes took (judge/slow_probes.py)
    durations: Dict[str, float] = field(default_factory=dict)


def _judge_host(name: str, entry: Mapping[str, Any], baselines: List[Dict[str, Any]], by_id: Mapping[str, Dict[str, Any]],
                rules: Any, earlier: Optional[Tuple[Mapping[str, Any], Mapping[str, str]]], previous_run_id: Optional[str],
                options: Dict[str, Any], catalogue: ProbeCatalogue, tally: _RuleTally,
                baseline_problems: Sequence[str] = ()) -> _HostJudgement:
    envelopes = entry.get("envelopes") or {}
    machine = catalogue.machine
    described = envelopes.get(machine.probe) if machine is not None else None
    described_data = _data(described)
    facts = machine.declaration.facts(described_data) if machine is not None and described_data is not None else None
    if facts is not None:
        sku, sku_reason, per_gpu = identify_host(facts.gpus, baselines, facts.gpus_unavailable)
    else:
        sku, per_gpu = None, []
        sku_reason = _no_sku_reason(catalogue.machine_probe, described)
    baseline = by_id.get(sku) if sku else None
    host_rules, problems = effective_rules(rules, entry.get("rule_overrides"))
    shape = ExpectedGpus(None, "")
    if machine is not None:
        override = expected_gpus_override(host_rules, machine.declaration.expected_gpus_check)
        shape = machine.declaration.expected_gpus(described_data if described_data is not None else _unmeasured_data(described),
                                                  baseline, override)
    expected_gpus, expected_gpus_source = shape.count, shape.source
    host_data = {probe: data for probe, data in ((probe, _data(envelope)) for probe, envelope in envelopes.items()) if data is not None}
    context = RuleContext(host=name, sku=sku, sku_reason=sku_reason, baseline=baseline, expected_gpus=expected_gpus,
                          expected_gpus_source=expected_gpus_source, host_data=host_data, machine=shape.shape,
                          earlier_envelopes=earlier[0] if earlier is not None else {}, baseline_problems=baseline_problems)
    checks = [_host_check("rules.overrides", name, "", "error", problem) for problem in problems]
    skipped = not_run_check(name, entry.get("not_run"))
    if skipped is not None:
        checks.append(skipped)
    if not envelopes:
        checks.append(_host_check("host.results", name, "", "error", entry.get("reason")
                                  or "the host was reached but no probe result came back"))
    for probe in sorted(envelopes):
        checks.extend(envelope_checks(name, probe, envelopes[probe], shape, facts, catalogue))
    checks.extend(_run_rules(name, envelopes, host_rules, context, catalogue, tally))
    for probe in sorted(envelopes):
        checks.extend(busy_checks(name, probe, _data(envelopes[probe])))
    checks.extend(clock_skew_checks(name, envelopes))
    gpu_groups = _gpu_groups(facts, per_gpu)
    host_group = _host_group(sku, gpu_groups)
    current_samples: Dict[str, List[Metric]] = {}
    samples: List[Tuple[str, str, str, Metric]] = []
    for probe in sorted(envelopes):
        current_samples[probe] = catalogue.probe_metrics(probe, _data(envelopes[probe]))
        for metric in current_samples[probe]:
            group = gpu_groups.get(metric.gpu_uuid, host_group) if metric.gpu_uuid else host_group
            samples.append((name, probe, group, metric))
    if earlier is not None:
        checks.extend(_drift(name, envelopes, earlier[0], previous_run_id, current_samples, options, catalogue, earlier[1], facts))
    settings = [setting for probe in sorted(envelopes) for setting in catalogue.probe_settings(probe, _data(envelopes[probe]))]
    outcomes = {probe: {"status": envelope.get("status"), "reason": envelope.get("reason")} if isinstance(envelope, Mapping)
                else envelope for probe, envelope in envelopes.items()}
    identities = gpu_identities(facts, (metric.gpu_uuid for unused_host, unused_probe, unused_group, metric in samples))
    promised = None
    if entry.get("promises") is not None:
        visible = facts.gpu_count if facts is not None else None
        gpu_count, count_source = (expected_gpus, expected_gpus_source) if expected_gpus is not None else (visible, "the GPUs visible")
        promised = _Promised(list(entry["promises"]), host_rules, HostFacts(gpu_count, count_source, sku, sku_reason, baseline, outcomes))
    return _HostJudgement(checks, sku, sku_reason, expected_gpus, expected_gpus_source, samples, host_group, settings,
                          outcomes, identities, promised, durations(envelopes))


def _no_sku_reason(machine_probe: str, envelope: Any) -> str:
    """Why no SKU was identified when the probe that describes the machine gave no data."""
    if not machine_probe:
        return "no probe describes the machine, so no SKU"
    if envelope is None:
        return "no %s result to identify the SKU from" % machine_probe
    return "the %s probe gave no data (%s: %s)" % (machine_probe, envelope.get("status"), envelope.get("reason"))


RunEach = Callable[[int, Callable[[int], Any]], Mapping[int, Any]]


def _one_after_another(count: int, job: Callable[[int], Any]) -> Dict[int, Any]:
    return {index: job(index) for index in range(count)}


def judging_error(name: str, exc: BaseException, groups: List[str]) -> HostVerdict:
    """The verdict of a host whose judging raised: error, with the exception's type and message."""
    return error_verdict(name, "host.judged", "judging this host raised %s: %s (a judge bug or a result no schema foresaw; "
                         "the other hosts are judged)" % (type(exc).__name__, exc), groups)


def judge_fleet(run_id: str, hosts: Mapping[str, Mapping[str, Any]], baselines: List[Dict[str, Any]], rules: Any,
                previous: Optional[Mapping[str, Mapping[str, Any]]] = None, previous_run_id: Optional[str] = None,
                settings: Optional[Mapping[str, Any]] = None,
                previous_problems: Optional[Mapping[str, Mapping[str, str]]] = None, *,
                catalogue: ProbeCatalogue, run_each: Optional[RunEach] = None, causes: Optional[Causes] = None,
                baseline_problems: Sequence[str] = (),
                last_reported: Optional[Callable[[Set[str]], Mapping[str, Tuple[Tuple[str, ...], str]]]] = None) -> FleetJudgement:
    """Judge every host of one run.

    hosts: {name: {"envelopes": {probe: envelope}, "reached": bool, "reason": str, "groups": [...], "rule_overrides": {...},
    "promises": [Promise, ...], "not_run": {"probes": [...], "why": str}}}. A host given promises is not_validated where one
    is not proven (judge/promises.py), one without (None) is judged on its checks alone; not_run (optional) names the
    profile's probes not run there (judge/not_run.py).
    baselines: validated baseline documents. rules: the rules document ({"rules": [...]}) or its list.
    previous: {name: {probe: envelope}}, each host's latest earlier run (its envelopes carry their run_id).
    previous_problems: {name: {probe: sentence}}, earlier results that could not be read or break their schema; the
    drift checks that needed them are skipped with the sentence.
    settings: overrides of DEFAULT_SETTINGS. catalogue: what the probes check and measure (their declarations).
    run_each: how the hosts' own checks are run, run_each(count, job) -> {index: job(index)}; default one after the
    other here (the report passes report_parallel's, over the cores). Each host is judged on its own and its rule tally
    merged in host order, so the judgement is the same however they are run.
    causes: which checks follow from which (judge/causes.py); default: what the rules document declares.
    baseline_problems: the baseline files that could not be loaded, named where a host without a SKU is not compared.
    last_reported: given the GPU identities of this run's hosts, {identity: (hosts, run id)} of the newest earlier run's
    hosts that reported each (store/earlier_gpus.py); a host whose GPUs another host reported last is not validated
    (identity_checks.moved_gpu_checks). None: not looked for.
    An exception while judging one host makes that host's verdict error with the exception; the others are judged.
    """
    options = dict(DEFAULT_SETTINGS)
    options.update(settings or {})
    causes = causes if causes is not None else Causes(rules)
    independent = frozenset("%s.probe_status" % probe for probe in catalogue.gpu_free)
    by_id = {baseline["id"]: baseline for baseline in baselines}
    tally = _RuleTally()
    for rule in rule_list(rules):
        if isinstance(rule, Mapping) and isinstance(rule.get("id"), str):
            tally.rules.setdefault(rule["id"], effective_rules([rule])[0][0])
    judged: Dict[str, _HostJudgement] = {}
    samples: List[Tuple[str, str, str, Metric]] = []
    verdicts: Dict[str, HostVerdict] = {}
    reached: List[str] = []
    compare_with_earlier = previous is not None or previous_problems is not None
    to_judge = []
    for name in sorted(hosts):
        entry = hosts[name]
        if not entry.get("reached", True):
            reason = entry.get("reason") or "no reason given"
            verdicts[name] = HostVerdict(host=name, verdict="unreachable", reasons=["host.reachable: not reached: %s" % reason],
                                         checks=[_host_check("host.reachable", name, "", "error", "not reached: %s" % reason)],
                                         sku=None, sku_reason="the host was not reached", groups=list(entry.get("groups") or []))
        else:
            to_judge.append(name)

    def judge_one(index: int) -> Tuple[Any, _RuleTally]:
        name = to_judge[index]
        host_tally = tally.one_hosts()
        earlier = (((previous or {}).get(name) or {}), ((previous_problems or {}).get(name) or {})) if compare_with_earlier else None
        try:
            found: Any = _judge_host(name, hosts[name], baselines, by_id, rules, earlier, previous_run_id, options, catalogue,
                                     host_tally, baseline_problems)
        except Exception as exc:  # pylint: disable=broad-exception-caught
            found = judging_error(name, exc, list(hosts[name].get("groups") or []))
        return found, host_tally.added_since(tally)

    answers = (run_each or _one_after_another)(len(to_judge), judge_one)
    for index, name in enumerate(to_judge):
        found, host_tally = answers[index]
        tally.merge(host_tally)
        if isinstance(found, HostVerdict):
            verdicts[name] = found
            continue
        judged[name] = found
        reached.append(name)
        samples.extend(found.samples)
    fleet_checks, statistics = _fleet_checks(samples, options)
    minorities = fleet_minorities({name: (judged[name].group, judged[name].settings) for name in reached})
    for name, found in minority_checks(minorities).items():
        fleet_checks.setdefault(name, []).extend(found)
    slow, slow_checks = slow_probes({name: (judged[name].group, judged[name].durations) for name in reached}, options["min_peers"])
    for name, found in slow_checks.items():
        fleet_checks.setdefault(name, []).extend(found)
    identities = {name: judged[name].gpu_identities for name in reached}
    groups_of = {name: hosts[name].get("groups") or [] for name in reached}
    for name, found in same_gpu_checks(identities, groups_of, catalogue.machine_probe).items():
        fleet_checks.setdefault(name, []).extend(found)
    if last_reported is not None:
        reporters = last_reported(set().union(*identities.values()))
        for name, found in moved_gpu_checks(identities, groups_of, reporters, catalogue.machine_probe).items():
            fleet_checks.setdefault(name, []).extend(found)
    unmatched, empty = _unmatched(tally, reached)
    group_hosts = Counter(judged[name].group for name in reached)
    for name in reached:
        host = judged[name]
        groups = list(hosts[name].get("groups") or [])
        try:
            mark_not_compared(host.checks, fleet_checks.get(name, []), host.sku, host.sku_reason, baseline_problems, host.group,
                              group_hosts[host.group], options["min_peers"])
            checks = host.checks + empty.get(name, []) + fleet_checks.get(name, [])
            unmeasured = gpu_measured_check(name, checks, host.outcomes, host.expected_gpus, host.expected_gpus_source,
                                            catalogue.machine_probe)
            if unmeasured is not None:
                checks = [unmeasured] + checks
            verdicts[name] = _verdict(name, checks, host.sku, host.sku_reason, groups, causes, independent, host.promised)
        except Exception as exc:  # pylint: disable=broad-exception-caught
            verdicts[name] = judging_error(name, exc, groups)
    return FleetJudgement(run_id=run_id, hosts=verdicts, unmatched_rules=unmatched, fleet_statistics=statistics,
                          previous_run_id=previous_run_id, setting_minorities=[minority.to_dict() for minority in minorities],
                          slow_probes=[entry.to_dict() for entry in slow])


def _unreadable_drift(host: str, probe: str, problem: str, current: Optional[MachineFacts], samples: List[Metric],
                      catalogue: ProbeCatalogue) -> List[Check]:
    """The drift checks that needed an earlier result that cannot be read: each a skip that says why."""
    reason = "not compared: %s" % problem
    checks = []
    if catalogue.machine is not None and catalogue.describes_machine(probe) and current is not None:
        checks.extend(_host_check(check_id, host, probe, "skip", reason) for check_id in catalogue.machine.declaration.drift_check_ids)
    checks.extend(_host_check("drift.%s" % sample.metric_id, host, probe, "skip", reason, gpu_uuid=sample.gpu_uuid,
                              gpu_index=sample.gpu_index, value=sample.value, unit=sample.unit) for sample in samples)
    return checks


def _drift(host: str, envelopes: Mapping[str, Any], earlier_envelopes: Mapping[str, Any], previous_run_id: Optional[str],
           current_samples: Dict[str, List[Metric]], options: Dict[str, Any], catalogue: ProbeCatalogue,
           earlier_problems: Optional[Mapping[str, str]] = None, current: Optional[MachineFacts] = None) -> List[Check]:
    """current: the machine's facts of this run (None when its probe gave no data)."""
    earlier_problems = earlier_problems or {}
    if not earlier_envelopes and not earlier_problems:
        return [_host_check("drift.previous_run", host, "", "skip", NO_EARLIER_RUN)]
    checks: List[Check] = []
    machine, machine_probe = catalogue.machine, catalogue.machine_probe
    settings = {probe: catalogue.probe_settings(probe, _data(envelopes.get(probe))) for probe in sorted(envelopes)}
    for probe, problem in sorted(earlier_problems.items()):
        checks.extend(_unreadable_drift(host, probe, problem, current, current_samples.get(probe) or [], catalogue))
        checks.extend(settings_not_compared(host, probe, settings.get(probe) or [], "not compared: %s" % problem))
    try:
        # read back from the store here: it may no longer be there
        earlier = _data(earlier_envelopes.get(machine_probe)) if machine is not None else None
        setting_checks: Dict[str, List[Check]] = {}
        setting_runs: Dict[str, str] = {}  # each probe's earlier run: a host's probes may come from different runs
        uncompared = set()  # probes measured now that no earlier run of the host measured (store/previous.py looked)
        for probe in sorted(settings):
            earlier_data = _data(earlier_envelopes.get(probe))
            if earlier_data is None and settings[probe] and probe not in earlier_problems:
                uncompared.add(probe)
            if earlier_data is not None and settings[probe] and probe not in earlier_problems:
                earlier_run = setting_runs[probe] = earlier_envelopes[probe].get("run_id") or previous_run_id or "the previous run"
                setting_checks[probe] = settings_drift(host, probe, settings[probe], catalogue.probe_settings(probe, earlier_data),
                                                       earlier_run)
        if current is not None and earlier is None and machine_probe not in earlier_problems:
            uncompared.add(machine_probe)
        if machine is not None and current is not None and earlier is not None and machine_probe not in earlier_problems:
            earlier_run = earlier_envelopes[machine_probe].get("run_id") or previous_run_id or "the previous run"
            checks.extend(machine.declaration.drift(host, machine_probe, current, machine.declaration.facts(earlier), earlier_run,
                                                    setting_checks.pop(machine_probe, [])))
        for probe in sorted(setting_checks):
            checks.extend(setting_checks[probe])
        changed: Dict[str, List[str]] = {}  # by the earlier run the settings were compared with
        for probe, probe_checks in setting_checks.items():
            changed.setdefault(setting_runs[probe], []).extend(check.id[len("drift."):] for check in probe_checks if check.status == "warn")
        for probe, samples in sorted(current_samples.items()):
            earlier_data = _data(earlier_envelopes.get(probe))
            if earlier_data is None and samples and probe not in earlier_problems:
                uncompared.add(probe)
            if earlier_data is None or not samples or probe in earlier_problems:
                continue
            earlier_run = earlier_envelopes[probe].get("run_id") or previous_run_id or "the previous run"
            moved = _metric_drift(host, probe, samples, catalogue.probe_metrics(probe, earlier_data), earlier_run, options,
                                  catalogue)
            for check in moved if changed.get(earlier_run) else []:
                # a measured rate beside the settings that changed under it: did the change move it?
                check.reason += "; settings changed since that run: %s" % ", ".join(changed[earlier_run])
            checks.extend(moved)
        if uncompared:
            checks.append(_host_check("drift.previous_run", host, "", "skip", "no earlier run of this host measured %s: not compared"
                                      % ", ".join(sorted(uncompared))))
    except Exception as exc:  # pylint: disable=broad-exception-caught
        # An earlier result the schema let through but the comparison cannot read, or one replaced since it was found:
        # drift is not judged, the host is.
        checks.append(_host_check("drift.previous_run", host, "", "skip", "drift not compared with %s: comparing raised %s: %s"
                                  % (previous_run_id or "the previous run", type(exc).__name__, exc)))
    return checks
