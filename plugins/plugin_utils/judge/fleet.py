# -*- coding: utf-8 -*-
# Copyright: gpufleet.validation contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The fleet judgement: every host judged on its own (judge/host_judgement.py, drift judge/drift.py), then the fleet
step: peers compared by SKU, setting minorities, slow probes, GPUs two hosts report, rules that matched nothing, and
each host's verdict (judge/verdict.py)."""
from __future__ import annotations

from collections import Counter
from typing import Any, Callable, Dict, List, Mapping, Optional, Sequence, Set, Tuple

from ..report.number_format import format_number, format_quantity
from .catalogue import ProbeCatalogue
from .causes import Causes
from .history_model import HISTORY_PROBE, RETURNING_FAULT_CHECK, HistorySource, HostHistory
from .host_judgement import HostJudgement, RuleTally, compared_values, judge_host
from .identity_checks import moved_gpu_checks, same_gpu_checks
from .metrics import Metric, subject_label, worse
from .model import Check, FleetJudgement, HostVerdict, error_verdict, host_check
from .not_compared import mark_not_compared
from .rules import effective_rules, rule_list
from .settings import fleet_minorities, minority_checks
from .slow_probes import slow_probes
from .stats import coefficient_of_variation, finite_numbers, mad, median, outlier_decision
from .trend_step import verdict_trend_checks
from .trends import Lowest, group_lowest, headline_specs
from .verdict import gpu_measured_check, host_verdict

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


def _fleet_checks(samples: List[Tuple[str, str, str, Metric]], settings: Dict[str, Any], catalogue: ProbeCatalogue
                  ) -> Tuple[Dict[str, List[Check]], Dict[str, Dict[str, Dict[str, Any]]]]:
    """samples: (host, probe, group, metric). Returns (checks per host, fleet_statistics). Each value is compared with its
    group's, a GPU's or another device's (a port's) alike; the check names which."""
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
        spec = catalogue.metric_spec(metric_id)
        kind = spec.device_kind if spec is not None else None
        for host, probe, metric in members:
            result = outlier_decision(metric.value, finite_count, center, spread, settings["outlier_threshold"],
                                      settings["relative_tolerance"], settings["min_peers"], settings["noise_floor"])
            check_id = "fleet.%s" % metric_id
            if result.outlier is None:
                if host not in reported_short:
                    reported_short.add(host)
                    checks.setdefault(host, []).append(host_check(check_id, host, probe, "skip", "%s not compared across the fleet (group %s): "
                                                                  "%s" % (metric_id, group, result.reason), unit=unit))
                continue
            deviation = metric.value - center
            flagged = result.outlier and worse(metric.better, deviation)
            label = subject_label(metric.gpu_uuid, metric.gpu_index, metric.device, kind)
            words = "%s%s %s against the fleet median %s of %s (MAD %s, %d values from %d hosts): %s" % (
                label, metric_id, format_quantity(metric.value, unit), format_quantity(center, unit), group,
                format_number(spread), len(values), len(hosts), result.reason)
            if result.outlier and not flagged:
                words += " (in the good direction)"
            checks.setdefault(host, []).append(host_check(
                check_id, host, probe, "warn" if flagged else "pass", words, gpu_uuid=metric.gpu_uuid, gpu_index=metric.gpu_index,
                device=metric.device, value=metric.value, unit=unit, reference=center,
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


def _unmatched(tally: RuleTally, reached_hosts: List[str]) -> Tuple[List[Check], Dict[str, List[Check]]]:
    unmatched: List[Check] = []
    per_host: Dict[str, List[Check]] = {}
    for rule_id, rule in sorted(tally.rules.items()):
        if tally.matched.get(rule_id):
            for host in tally.empty_hosts.get(rule_id, []):
                per_host.setdefault(host, []).append(host_check(rule_id, host, rule["probe"], "skip", "rule %s found nothing to read in "
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
                per_host.setdefault(host, []).append(host_check(
                    UNMATCHED_FAIL_RULE, host, rule["probe"], "fail", "rule %s (severity fail) reads %s of the %s data, which no host's "
                    "result holds, so it checked nothing and cannot vouch for this host: correct the path in the rules file"
                    % (rule_id, rule["params"]["path"], rule["probe"]), value=rule["params"]["path"], threshold="the field exists"))
        else:
            words, status = ("the %s probe gave no data on any host (%d reached), so rule %s checked nothing"
                             % (rule["probe"], len(reached_hosts), rule_id), "skip")
        unmatched.append(Check(id=rule_id, host="", probe=rule["probe"], status=status, reason=words))
    return unmatched, per_host


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
                last_reported: Optional[Callable[[Set[str]], Mapping[str, Tuple[Tuple[str, ...], str]]]] = None,
                history: Optional[HistorySource] = None) -> FleetJudgement:
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
    history: the hosts' earlier runs from the run index, for the trend checks (judge/trends.py, rules of probe
    "history"); None: no trend check is made.
    An exception while judging one host makes that host's verdict error with the exception; the others are judged.
    """
    options = dict(DEFAULT_SETTINGS)
    options.update(settings or {})
    causes = causes if causes is not None else Causes(rules)
    tally = RuleTally()
    for rule in rule_list(rules):
        if isinstance(rule, Mapping) and isinstance(rule.get("id"), str) and rule.get("probe") != HISTORY_PROBE:
            tally.rules.setdefault(rule["id"], effective_rules([rule])[0][0])
    verdicts = _unreached(hosts)
    to_judge = [name for name in sorted(hosts) if name not in verdicts]
    earlier = previous, previous_problems
    job = _host_job(to_judge, hosts, baselines, rules, earlier, previous_run_id, options, catalogue, tally, baseline_problems, history)
    answers = (run_each or _one_after_another)(len(to_judge), job)
    judged: Dict[str, HostJudgement] = {}
    for index, name in enumerate(to_judge):
        found, host_tally = answers[index]
        tally.merge(host_tally)
        if isinstance(found, HostVerdict):
            verdicts[name] = found
        else:
            judged[name] = found
    fleet_checks, statistics, minorities, slow = _fleet_step(judged, hosts, options, catalogue, last_reported)
    unmatched, empty = _unmatched(tally, list(judged))
    lowest = group_lowest((sample for host in judged.values() for sample in host.samples), headline_specs(catalogue.metric_specs))
    _weigh_hosts(judged, hosts, fleet_checks, empty, verdicts, options, catalogue, causes, baseline_problems, lowest)
    return FleetJudgement(run_id=run_id, hosts=verdicts, unmatched_rules=unmatched, fleet_statistics=statistics,
                          previous_run_id=previous_run_id, setting_minorities=[minority.to_dict() for minority in minorities],
                          slow_probes=[entry.to_dict() for entry in slow])


def _weigh_hosts(judged: Mapping[str, HostJudgement], hosts: Mapping[str, Mapping[str, Any]], fleet_checks: Dict[str, List[Check]],
                 empty: Dict[str, List[Check]], verdicts: Dict[str, HostVerdict], options: Dict[str, Any], catalogue: ProbeCatalogue,
                 causes: Causes, baseline_problems: Sequence[str], lowest: Mapping[str, List[Lowest]]) -> None:
    """Each reached host's verdict (into verdicts, in judged's order) from its own checks and the fleet's of it, then
    from its trend checks too where its history was read (judge/trend_step.py); a host whose weighing raises stands in
    error."""
    specs = headline_specs(catalogue.metric_specs)
    independent = frozenset("%s.probe_status" % probe for probe in catalogue.gpu_free)
    group_hosts = Counter(host.group for host in judged.values())
    for name, host in judged.items():
        groups = list(hosts[name].get("groups") or [])
        try:
            mark_not_compared(host.checks, fleet_checks.get(name, []), host.sku, host.sku_reason, baseline_problems, host.group,
                              group_hosts[host.group], options["min_peers"])
            checks = host.checks + empty.get(name, []) + fleet_checks.get(name, [])
            unmeasured = gpu_measured_check(name, checks, host.outcomes, host.expected_gpus, host.expected_gpus_source,
                                            catalogue.machine_probe)
            verdict = host_verdict(name, ([unmeasured] if unmeasured is not None else []) + checks, host.sku, host.sku_reason,
                                   groups, causes, independent, host.promised)
            if host.history is not None:
                verdict = _with_trends(name, host, verdict, lowest.get(name, []), specs, groups, causes, independent)
            verdict.lowest_of_group = [entry.metric_id for entry in lowest.get(name, [])]
            verdict.floors = host.floors
            verdict.metrics, verdict.settings = compared_values(host)
            verdicts[name] = verdict
        except Exception as exc:  # pylint: disable=broad-exception-caught
            verdicts[name] = judging_error(name, exc, groups)


def _with_trends(name: str, host: HostJudgement, verdict: HostVerdict, lowest: List[Lowest], specs: Mapping[str, Any],
                 groups: List[str], causes: Causes, independent: frozenset) -> HostVerdict:
    """The verdict with the host's trend checks: judged again only where one of them does not pass (a pass or skip
    changes no verdict, reason or proof)."""
    measured = verdict.verdict
    trend = host.trend_checks + verdict_trend_checks(name, host.trend_rules, verdict, host.history, lowest, specs, host.sampled_metrics)
    if any(check.status not in ("pass", "skip") for check in trend):
        # an escalation leads the reasons (the drain reason in Slurm is the first: docs/acting.md), the other trends follow
        first = [check for check in trend if check.status == "fail" and check.id == RETURNING_FAULT_CHECK]
        rest = [check for check in trend if check not in first]
        verdict = host_verdict(name, first + verdict.checks + rest, host.sku, host.sku_reason, groups, causes, independent, host.promised)
    else:
        verdict.checks.extend(trend)
    verdict.measured_verdict = measured
    return verdict


def _history_of(history: Optional[HistorySource], name: str) -> Tuple[Optional[HostHistory], str]:
    """(the host's earlier runs, when this run started) for judge_host; a reader that raises leaves the trend checks
    skipped with what it raised."""
    if history is None:
        return None, ""
    try:
        return history.of(name), history.started
    except Exception as exc:  # pylint: disable=broad-exception-caught
        return HostHistory.unavailable("reading its earlier runs from the run index raised %s: %s" % (type(exc).__name__, exc)), history.started


def _unreached(hosts: Mapping[str, Mapping[str, Any]]) -> Dict[str, HostVerdict]:
    """{name: its verdict, unreachable} of the hosts not reached, in name order."""
    verdicts: Dict[str, HostVerdict] = {}
    for name in sorted(hosts):
        entry = hosts[name]
        if not entry.get("reached", True):
            reason = entry.get("reason") or "no reason given"
            verdicts[name] = HostVerdict(host=name, verdict="unreachable", reasons=["host.reachable: not reached: %s" % reason],
                                         checks=[host_check("host.reachable", name, "", "error", "not reached: %s" % reason)],
                                         sku=None, sku_reason="the host was not reached", groups=list(entry.get("groups") or []))
    return verdicts


def _host_job(to_judge: List[str], hosts: Mapping[str, Mapping[str, Any]], baselines: List[Dict[str, Any]], rules: Any,
              earlier: Tuple[Optional[Mapping[str, Mapping[str, Any]]], Optional[Mapping[str, Mapping[str, str]]]],
              previous_run_id: Optional[str], options: Dict[str, Any], catalogue: ProbeCatalogue, tally: RuleTally,
              baseline_problems: Sequence[str], history: Optional[HistorySource]) -> Callable[[int], Tuple[Any, RuleTally]]:
    """job(index): the host to_judge[index] judged on its own (its HostJudgement, or its error verdict if judging it
    raised) and what it adds to the rule tally. earlier: (previous, previous_problems) of judge_fleet. history: read a
    host at a time in the worker that judges it (its earlier runs are its own)."""
    by_id = {baseline["id"]: baseline for baseline in baselines}
    previous, previous_problems = earlier
    compare_with_earlier = previous is not None or previous_problems is not None

    def judge_one(index: int) -> Tuple[Any, RuleTally]:
        name = to_judge[index]
        host_tally = tally.one_hosts()
        earlier = (((previous or {}).get(name) or {}), ((previous_problems or {}).get(name) or {})) if compare_with_earlier else None
        try:
            found: Any = judge_host(name, hosts[name], baselines, by_id, rules, earlier, previous_run_id, options, catalogue,
                                    host_tally, baseline_problems, *_history_of(history, name))
        except Exception as exc:  # pylint: disable=broad-exception-caught
            found = judging_error(name, exc, list(hosts[name].get("groups") or []))
        return found, host_tally.added_since(tally)
    return judge_one


def _fleet_step(judged: Mapping[str, HostJudgement], hosts: Mapping[str, Mapping[str, Any]], options: Dict[str, Any],
                catalogue: ProbeCatalogue, last_reported: Optional[Callable[[Set[str]], Mapping[str, Tuple[Tuple[str, ...], str]]]]
                ) -> Tuple[Dict[str, List[Check]], Dict[str, Dict[str, Dict[str, Any]]], List[Any], List[Any]]:
    """The checks that compare the reached hosts: outliers among peers, setting minorities, slow probes, a GPU two hosts
    report, or another host reported last. Returns (checks per host, fleet statistics, minorities, slow probes)."""
    samples = [sample for host in judged.values() for sample in host.samples]
    fleet_checks, statistics = _fleet_checks(samples, options, catalogue)
    minorities = fleet_minorities({name: (host.group, host.settings) for name, host in judged.items()})
    for name, found in minority_checks(minorities).items():
        fleet_checks.setdefault(name, []).extend(found)
    slow, slow_checks = slow_probes({name: (host.group, host.durations) for name, host in judged.items()}, options["min_peers"])
    for name, found in slow_checks.items():
        fleet_checks.setdefault(name, []).extend(found)
    identities = {name: host.gpu_identities for name, host in judged.items()}
    groups_of = {name: hosts[name].get("groups") or [] for name in judged}
    for name, found in same_gpu_checks(identities, groups_of, catalogue.machine_probe).items():
        fleet_checks.setdefault(name, []).extend(found)
    if last_reported is not None:
        reporters = last_reported(set().union(*identities.values()))
        for name, found in moved_gpu_checks(identities, groups_of, reporters, catalogue.machine_probe).items():
            fleet_checks.setdefault(name, []).extend(found)
    return fleet_checks, statistics, minorities, slow
