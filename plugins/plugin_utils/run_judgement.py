"""Judge a stored run: its results, the baselines, the rules with each host's overrides, each host's previous run."""
from __future__ import annotations

from typing import Any, Callable, Dict, List, Mapping, Optional, Sequence, Set, Tuple

from ..module_utils.envelope_statuses import MEASURED_STATUSES
from .judge.fleet import judge_fleet
from .judge.history_model import HistorySource
from .judge.identity_checks import gpu_identities
from .judge.model import Check, FleetJudgement, blocks_gate
from .judge.promises import Promise
from .judge.rules import CheckTexts
from .judge.trends import headline_specs
from .judge.weakened_rules import weakened_lines, weakened_rules
from .control_chars import terminal_text
from .rules_and_baselines import load_baselines, load_rules, replaced_shipped
from .probe_kit.registry import declaration, probe_catalogue, profile_probes, profiles
from .report.parallel import run_large_jobs_over_the_cores, run_over_the_cores, worker_count
from .store.earlier_gpus import ReportedGpus
from .store.previous import PreviousResults, earlier_runs, find_previous_results, most_common_run
from .store.run_order import order_warnings
from .store.stored_run import HostModel, RunModel, StoredEnvelopes
from .store.schemas import stored_envelope_problems

RUN_ORDER_CHECK_ID = "store.run_order"


def promised_probes(host: HostModel, profile: Optional[str] = None, custom_profiles: Any = None) -> Tuple[List[str], str]:
    """(the probes whose headlines the host's profile promises, where that list comes from).

    profile: the one the report was told to judge with (playbooks/report.yml -e gpufleet_profile=...); else the host's
    own run recorded its profile's probes (inputs.json), else its declared profile's; a profile this collection does not
    know, or a run that recorded none, promises what the host's probes left a result of. ValueError: an unknown profile
    given now."""
    if profile:
        return profile_probes(profile, custom_profiles), "profile %s" % profile
    recorded, name = host.inputs.get("probes"), host.inputs.get("profile")
    if isinstance(recorded, list) and all(isinstance(probe, str) for probe in recorded):
        return list(recorded), "profile %s, as its run recorded it" % name
    if isinstance(name, str) and name in profiles():
        return profiles()[name], "profile %s" % name
    return sorted(host.probes), "the probes that left a result (%s)" % (
        "profile %s is not one this collection declares" % name if name else "its run recorded no profile")


def host_promises(probes: Sequence[str]) -> List[Promise]:
    """The headlines the probes declare (ProbeRun.headlines), in their order; an unknown probe promises nothing."""
    promises = []
    for probe in probes:
        found = declaration(probe)
        for headline in found.headlines if found is not None else ():
            promises.append(Promise(headline.rule, probe, found.min_gpus, headline.needs_datasheet))
    return promises


def host_inputs(run: RunModel, rule_overrides: Mapping[str, Mapping],
                override_sources: Optional[Mapping[str, Mapping[str, str]]] = None, profile: Optional[str] = None,
                custom_profiles: Any = None) -> Dict[str, Dict]:
    """What judge_fleet takes of each host of a stored run, its profile's promises included (ValueError: an unknown
    profile given now)."""
    return {
        host.name: {
            "envelopes": StoredEnvelopes(host.probes),
            "reached": host.state != "unreachable",
            "reason": "; ".join(host.reasons),
            "groups": list(host.groups),
            "rule_overrides": rule_overrides.get(host.name) or {},
            "promises": host_promises(promised_probes(host, profile, custom_profiles)[0]),
            "rule_override_sources": dict((override_sources or {}).get(host.name) or {}),
            "not_run": host.inputs.get("not_run"),
        }
        for host in run.hosts
    }


def judge_run(run: RunModel, results_dir: str, rule_overrides: Mapping[str, Mapping],
              baselines_dir: Optional[str] = None, rules_path: Optional[str] = None,
              workers: Optional[int] = None, override_sources: Optional[Mapping[str, Mapping[str, str]]] = None,
              profile: Optional[str] = None, custom_profiles: Any = None,
              trend_history: Optional[Callable[[List[str], Any, Sequence[str]], HistorySource]] = None) -> FleetJudgement:
    """Raises ValueError when the rules file is broken or the profile given is unknown; a broken baseline file is
    reported, not fatal. workers: processes that judge the hosts' own checks (default: one per usable core, for runs
    large enough; report_parallel); the judgement is the same with any number. override_sources: {host: {rule id: where
    its override came from}} where not gpufleet_rule_overrides as given now (judge/weakened_rules.py). profile: judge
    every host with what that profile promises (default: what each host's own run recorded, promised_probes).
    trend_history(earlier run ids, rules, headline metric ids): the hosts' earlier runs for the trend checks (the report
    gives the run index's reader, history/report_update.py); None: no trend check is made."""
    baselines, baseline_problems = load_baselines(baselines_dir)
    rules = load_rules(rules_path)
    # Each probe a host measured now is compared with the newest earlier run that measured it (store/previous.py).
    measured = {host.name: [probe for probe, entry in host.probes.items() if entry.status in MEASURED_STATUSES] for host in run.hosts}
    catalogue = probe_catalogue()
    # The earlier runs are listed once, and each earlier result read once: what the GPUs moved check needs of them is
    # noted as they are read for drift.
    earlier = earlier_runs(results_dir, run.run_id)
    reported = ReportedGpus(catalogue.machine_probe, lambda envelope: _identities_of(envelope, catalogue))
    previous = _previous_results(results_dir, run, earlier, measured, reported, workers)
    inputs = host_inputs(run, rule_overrides, override_sources, profile, custom_profiles)
    history = trend_history(earlier, rules, sorted(headline_specs(catalogue.metric_specs))) if trend_history is not None else None
    judgement = judge_fleet(run.run_id, inputs, baselines, rules,
                            previous=previous.envelopes or None, previous_run_id=most_common_run(previous.run_ids),
                            previous_problems=previous.problems or None, catalogue=catalogue,
                            run_each=lambda count, job: run_over_the_cores(count, job, workers), baseline_problems=baseline_problems,
                            last_reported=lambda wanted: reported.last_reporters(results_dir, earlier, wanted), history=history)
    # The rules in use name their checks; the default file still names the judge's own (fleet.*, host.* ...).
    titles = {metric_id: spec.title for metric_id, spec in probe_catalogue().metric_specs.items()}
    shipped = load_rules() if rules_path else rules
    judgement.texts = CheckTexts(rules, shipped, metric_titles=titles) if rules_path else CheckTexts(rules, metric_titles=titles)
    judgement.weakened_rules = weakened_rules(rules, shipped, inputs, "rules file %s" % rules_path if rules_path else "")
    judgement.unmatched_rules.extend(
        Check(id="baselines.load", host="", probe="", status="error",
              reason="%s; hosts of that SKU are compared with their peers only" % problem)
        for problem in baseline_problems)
    judgement.unmatched_rules.extend(Check(id="baselines.replaced", host="", probe="", status="warn", reason=sentence)
                                     for sentence in replaced_shipped(baselines))
    judgement.unmatched_rules.extend(Check(id=RUN_ORDER_CHECK_ID, host="", probe="", status="warn", reason=sentence)
                                     for sentence in order_warnings(results_dir, run.run_id, earlier))
    return judgement


def _previous_results(results_dir: str, run: RunModel, earlier: List[str], measured: Mapping[str, List[str]],
                      reported: ReportedGpus, workers: Optional[int]) -> PreviousResults:
    """find_previous_results of the run's hosts, with what the GPUs moved check needs of each result read noted in
    reported; over the cores for a large run. A host's search reads only its own earlier results, so the hosts are
    searched in parts (every processes-th host) and put together again: the same results as one search of all. With
    no earlier run there is nothing to search, and no worker is started."""
    names = [host.name for host in run.hosts]
    processes = worker_count(len(names), workers) if earlier else 1

    def search(part: int) -> Tuple[PreviousResults, Dict]:
        notes = ReportedGpus(reported.probe, reported.identities_of)
        found = find_previous_results(results_dir, run.run_id, names[part::processes], check_envelope=stored_envelope_problems,
                                      wanted=measured, describing=reported.probe, runs=earlier, on_read=notes.note)
        return found, notes.noted
    parts = run_large_jobs_over_the_cores(processes, search, processes)
    previous = PreviousResults()
    for part in range(processes):
        found, noted = parts[part]
        previous.envelopes.update(found.envelopes)
        previous.run_ids.update(found.run_ids)
        previous.problems.update(found.problems)
        reported.noted.update(noted)
    return previous


def _identities_of(envelope: Mapping[str, Any], catalogue: Any) -> Set[str]:
    """The GPU identities an earlier run's describing envelope reports (its machine facts), or none."""
    data = envelope.get("data") if envelope.get("status") in MEASURED_STATUSES else None
    if not isinstance(data, dict) or catalogue.machine is None:
        return set()
    try:
        return gpu_identities(catalogue.machine.declaration.facts(data))
    except Exception:  # pylint: disable=broad-exception-caught  # an earlier result of another shape says nothing here
        return set()


def gate_lines(judgement: FleetJudgement) -> List[str]:
    """One line per host that fails the gate, with its reasons; control characters written as \\xNN."""
    return [terminal_text("%s: %s - %s" % (verdict.host, verdict.verdict, "; ".join(verdict.reasons) or "no reason recorded"))
            for verdict in judgement.hosts_worst_first() if blocks_gate(verdict)]


def weakened_rule_lines(judgement: FleetJudgement) -> List[str]:
    """One line per shipped rule the run disabled or downgraded (bounded), naming by what and for which hosts; control
    characters written as \\xNN."""
    return [terminal_text(line) for line in weakened_lines(judgement.weakened_rules, len(judgement.hosts))]


def verdict_lines(judgement: FleetJudgement, limit_reasons: int = 3) -> List[str]:
    """One line per host, worst first: its verdict and first reasons; control characters written as \\xNN."""
    lines = []
    for verdict in judgement.hosts_worst_first():
        reasons: Sequence[str] = verdict.reasons[:limit_reasons]
        more = len(verdict.reasons) - len(reasons)
        text = "; ".join(reasons) + (" (+%d more)" % more if more > 0 else "")
        lines.append(terminal_text("%s: %s%s" % (verdict.host, verdict.verdict, (" - " + text) if text else "")))
    return lines
