# -*- coding: utf-8 -*-
# Copyright: gpufleet.validation contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""One host judged on its own, before the fleet is compared: its SKU, its probes' statuses, every rule on its results,
its metrics grouped for the fleet comparison, its drift, settings and what its profile promised."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Dict, List, Mapping, Optional, Sequence, Set, Tuple

from ...module_utils.envelope_statuses import FAILED_STATUSES
from ..result_fields import dig
from ..unreadable_result import UNREADABLE_VALUE, is_stand_in
from .busy import busy_checks
from .catalogue import ProbeCatalogue
from .check_helpers import param_source
from .clock_skew import clock_skew_checks
from .drift import drift_checks
from .envelopes import measured_data, unmeasured_data
from .history_model import HISTORY_PROBE, HostHistory
from .identity_checks import gpu_identities
from .machine_facts import ExpectedGpus, MachineFacts
from .metrics import Metric
from .model import Check, host_check
from .not_run import not_run_check
from .promises import HostFacts, Promise
from .rules import RuleContext, cap_status, effective_rules
from .settings import Setting
from .sku import identify_host, unknown_group
from .slow_probes import durations
from .trend_step import decay_checks, fail_floors, trend_rules
from .trends import headline_specs


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
        return [host_check(check_id, host, probe, "error", "the %s result cannot be judged: %s" % (probe, reason), value=UNREADABLE_VALUE)]
    if status in FAILED_STATUSES:
        return [host_check(check_id, host, probe, "error", "the %s probe ended with status %s: %s" % (probe, status, reason), value=status)]
    if status == "partial":
        data = envelope.get("data") if isinstance(envelope.get("data"), dict) else {}
        sections = ", ".join("%s (%s)" % (entry.get("section"), entry.get("error")) for entry in data.get("errors") or [])
        return [host_check(check_id, host, probe, "warn", "the %s probe is partial: %s%s" % (
            probe, reason, "; sections that failed: %s" % sections if sections else ""), value=status)]
    if status == "unavailable":
        return [_unavailable_check(host, probe, reason, shape, envelope, catalogue, facts.gpu_count if facts is not None else None)]
    if status != "ok":
        return [host_check(check_id, host, probe, "error", "the %s probe returned an unknown status %r: %s" % (probe, status, reason),
                           value=status)]
    if facts is None and catalogue.describes_machine(probe):
        return [host_check(check_id, host, probe, "error", "the %s envelope has no data" % probe, value=status)]
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
        return host_check(check_id, host, probe, "skip", "the %s probe needs at least %d GPUs and only %d of the %d this host "
                          "should have (%s) %s visible: the %s checks say why the others are missing; %s" % (
                              probe, needed, visible, expected, source, "is" if visible == 1 else "are",
                              catalogue.machine_probe, reason), **counted)
    if expected is not None and expected < needed:
        if expected == 0:
            words = "the %s probe could not run here, and none is expected: %s: %s" % (probe, source, reason)
        else:
            words = "the %s probe needs at least %d GPUs and this host should have %d (%s): %s" % (probe, needed, expected, source, reason)
        return host_check(check_id, host, probe, "skip", words, **counted)
    if probe in catalogue.judges_nothing:
        check = host_check(check_id, host, probe, "warn", "the %s probe could not run: %s (it judges nothing, so the GPUs are not "
                           "failed for it)" % (probe, reason), **fields)
    elif expected:
        check = host_check(check_id, host, probe, "fail", "the %s probe could not run although this host should have %d GPUs (%s): %s"
                           % (probe, expected, source, reason), **counted)
    elif isinstance(nodes, int) and nodes > 0:
        check = host_check(check_id, host, probe, "warn", "the %s probe could not run although the host has %d /dev/nvidiaN "
                           "device nodes: %s" % (probe, nodes, reason), **fields)
    else:
        return host_check(check_id, host, probe, "skip", "the %s probe could not run here, and nothing says this host should have "
                          "a GPU: %s" % (probe, reason), **fields)
    check.action, check.remedy = "fix_config", MISSING_PART_REMEDY
    return check


class RuleTally:
    """Which rules matched something somewhere, to report the ones that matched nothing."""

    def __init__(self, rules: Optional[Dict[str, Dict[str, Any]]] = None) -> None:
        self.matched: Dict[str, int] = {}
        self.probe_ran: Dict[str, int] = {}
        self.no_function: Dict[str, str] = {}
        self.rules: Dict[str, Dict[str, Any]] = dict(rules or {})
        self.empty_hosts: Dict[str, List[str]] = {}

    def one_hosts(self) -> "RuleTally":
        """A tally for one host's rules, to be merged back (merge) in host order: what judging a host sends back."""
        return RuleTally(self.rules)

    def added_since(self, base: "RuleTally") -> "RuleTally":
        """This host tally without the rules ``base`` already had (they need not travel back from a worker)."""
        added = RuleTally()
        added.matched, added.probe_ran, added.no_function = self.matched, self.probe_ran, self.no_function
        added.empty_hosts = self.empty_hosts
        added.rules = {rule_id: rule for rule_id, rule in self.rules.items() if rule_id not in base.rules}
        return added

    def merge(self, host: "RuleTally") -> None:
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
               catalogue: ProbeCatalogue, tally: RuleTally) -> List[Check]:
    checks: List[Check] = []
    for rule in rules:
        tally.rules.setdefault(rule["id"], rule)
        if not rule["enabled"]:
            why = "by this host's rule overrides" if "enabled" in rule["overridden"] else "in the rules"
            checks.append(host_check(rule["id"], host, rule["probe"], "skip", "rule disabled %s" % why))
            tally.matched[rule["id"]] = tally.matched.get(rule["id"], 0) + 1
            continue
        data = measured_data(envelopes.get(rule["probe"]))
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
            found = [host_check(rule["id"], host, rule["probe"], "error", "the check %s raised %s: %s (a judge bug; the data is kept)"
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


@dataclass
class Promised:
    """What a host's profile promises and what its proofs are weighed against (judge/promises.py)."""

    promises: List[Promise]
    rules: List[Dict[str, Any]]
    facts: HostFacts


@dataclass
class HostJudgement:
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
    promised: Optional[Promised] = None
    # {probe: seconds} its probes took (judge/slow_probes.py)
    durations: Dict[str, float] = field(default_factory=dict)
    # its earlier runs from the run index and its trend rules by check name; None where no history was asked for
    history: Optional[HostHistory] = None
    trend_rules: Dict[str, Mapping[str, Any]] = field(default_factory=dict)
    # its slow-decay checks, kept out of checks until its verdict before them is known (judge/trend_step.py)
    trend_checks: List[Check] = field(default_factory=list)
    # {series key: (the value its headline's check fails below, in words)}: trend_step.fail_floors, for slow decay and
    # the dossier's history plots
    floors: Dict[Any, Any] = field(default_factory=dict)

    @property
    def sampled_metrics(self) -> List[Metric]:
        """The metrics of its samples, in their order (what the trend checks read)."""
        return [metric for unused_host, unused_probe, unused_group, metric in self.samples]


def compared_values(host: HostJudgement) -> Tuple[List[Dict[str, Any]], List[Dict[str, Any]]]:
    """(every metric value, every setting) the judge compared on the host, as fleet.json keeps them: a metric keyed by
    its GPU (uuid and index), its named device, or neither (the host); a setting by where it is ("" the host)."""
    metrics = [{"id": metric.metric_id, "probe": probe, "gpu_uuid": metric.gpu_uuid, "gpu_index": metric.gpu_index,
                "device": metric.device, "value": metric.value, "unit": metric.unit}
               for unused_host, probe, unused_group, metric in host.samples]
    settings = [{"id": setting.setting_id, "where": setting.where, "value": setting.value, "unit": setting.unit}
                for setting in host.settings]
    return metrics, settings


def judge_host(name: str, entry: Mapping[str, Any], baselines: List[Dict[str, Any]], by_id: Mapping[str, Dict[str, Any]],
               rules: Any, earlier: Optional[Tuple[Mapping[str, Any], Mapping[str, str]]], previous_run_id: Optional[str],
               options: Dict[str, Any], catalogue: ProbeCatalogue, tally: RuleTally,
               baseline_problems: Sequence[str] = (), history: Optional[HostHistory] = None, started: str = "") -> HostJudgement:
    envelopes = entry.get("envelopes") or {}
    machine = catalogue.machine
    described = envelopes.get(machine.probe) if machine is not None else None
    described_data = measured_data(described)
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
        shape = machine.declaration.expected_gpus(described_data if described_data is not None else unmeasured_data(described),
                                                  baseline, override)
    host_data = {probe: data for probe, data in ((probe, measured_data(envelope)) for probe, envelope in envelopes.items()) if data is not None}
    context = RuleContext(host=name, sku=sku, sku_reason=sku_reason, baseline=baseline, expected_gpus=shape.count,
                          expected_gpus_source=shape.source, host_data=host_data, machine=shape.shape,
                          earlier_envelopes=earlier[0] if earlier is not None else {}, baseline_problems=baseline_problems)
    checks = [host_check("rules.overrides", name, "", "error", problem) for problem in problems]
    checks.extend(_result_checks(name, entry, shape, facts, catalogue))
    trends = trend_rules(host_rules)
    checks.extend(_run_rules(name, envelopes, [rule for rule in host_rules if rule.get("probe") != HISTORY_PROBE], context, catalogue, tally))
    for probe in sorted(envelopes):
        checks.extend(busy_checks(name, probe, measured_data(envelopes[probe])))
    checks.extend(clock_skew_checks(name, envelopes))
    gpu_groups = _gpu_groups(facts, per_gpu)
    host_group = _host_group(sku, gpu_groups)
    current_samples, samples = _samples(name, envelopes, catalogue, gpu_groups, host_group)
    if earlier is not None:
        checks.extend(drift_checks(name, envelopes, earlier[0], previous_run_id, current_samples, options, catalogue, earlier[1], facts))
    settings = [setting for probe in sorted(envelopes) for setting in catalogue.probe_settings(probe, measured_data(envelopes[probe]))]
    outcomes = {probe: {"status": envelope.get("status"), "reason": envelope.get("reason")} if isinstance(envelope, Mapping)
                else envelope for probe, envelope in envelopes.items()}
    identities = gpu_identities(facts, (metric.gpu_uuid for unused_host, unused_probe, unused_group, metric in samples))
    promised = None
    if entry.get("promises") is not None:
        visible = facts.gpu_count if facts is not None else None
        gpu_count, count_source = (shape.count, shape.source) if shape.count is not None else (visible, "the GPUs visible")
        # only what the proofs read travels with the host's judgement (it is pickled back from a worker and kept to the
        # fleet step): the promised rules, not all of them, and the datasheet's entries, not the whole baseline
        promises = list(entry["promises"])
        promised_ids = {promise.rule for promise in promises}
        datasheet = frozenset((baseline.get("datasheet") or {}).keys()) if isinstance(baseline, Mapping) else None
        promised = Promised(promises, [rule for rule in host_rules if isinstance(rule, Mapping) and rule.get("id") in promised_ids],
                            HostFacts(gpu_count, count_source, sku, sku_reason, datasheet, outcomes))
    judgement = HostJudgement(checks, sku, sku_reason, shape.count, shape.source, samples, host_group, settings,
                              outcomes, identities, promised, durations(envelopes))
    return _with_trend_parts(judgement, name, catalogue, host_rules, trends, history, started)


def _with_trend_parts(judgement: HostJudgement, name: str, catalogue: ProbeCatalogue, host_rules: List[Dict[str, Any]],
                      trends: Dict[str, Mapping[str, Any]], history: Optional[HostHistory], started: str) -> HostJudgement:
    """The judgement with the host's headline floors, and where its history was read, its trend rules and its slow-decay
    checks (judge/trend_step.py)."""
    specs = headline_specs(catalogue.metric_specs)
    judgement.floors = fail_floors(judgement.checks, host_rules, specs)
    if history is not None:
        judgement.history, judgement.trend_rules = history, trends
        judgement.trend_checks = decay_checks(name, trends, judgement.sampled_metrics, specs, history, started, judgement.floors)
    return judgement


def _result_checks(name: str, entry: Mapping[str, Any], shape: ExpectedGpus, facts: Optional[MachineFacts],
                   catalogue: ProbeCatalogue) -> List[Check]:
    """The checks of what came back at all: probes of the profile not run, no result, each probe's status."""
    envelopes = entry.get("envelopes") or {}
    checks = []
    skipped = not_run_check(name, entry.get("not_run"))
    if skipped is not None:
        checks.append(skipped)
    if not envelopes:
        checks.append(host_check("host.results", name, "", "error", entry.get("reason")
                                 or "the host was reached but no probe result came back"))
    for probe in sorted(envelopes):
        checks.extend(envelope_checks(name, probe, envelopes[probe], shape, facts, catalogue))
    return checks


def _samples(name: str, envelopes: Mapping[str, Any], catalogue: ProbeCatalogue, gpu_groups: Dict[str, str], host_group: str
             ) -> Tuple[Dict[str, List[Metric]], List[Tuple[str, str, str, Metric]]]:
    """({probe: its metrics}, (host, probe, group, metric) of each): a GPU's metric is compared within its GPU's group."""
    current_samples: Dict[str, List[Metric]] = {}
    samples: List[Tuple[str, str, str, Metric]] = []
    for probe in sorted(envelopes):
        current_samples[probe] = catalogue.probe_metrics(probe, measured_data(envelopes[probe]))
        for metric in current_samples[probe]:
            group = gpu_groups.get(metric.gpu_uuid, host_group) if metric.gpu_uuid else host_group
            samples.append((name, probe, group, metric))
    return current_samples, samples


def _no_sku_reason(machine_probe: str, envelope: Any) -> str:
    """Why no SKU was identified when the probe that describes the machine gave no data."""
    if not machine_probe:
        return "no probe describes the machine, so no SKU"
    if envelope is None:
        return "no %s result to identify the SKU from" % machine_probe
    return "the %s probe gave no data (%s: %s)" % (machine_probe, envelope.get("status"), envelope.get("reason"))
