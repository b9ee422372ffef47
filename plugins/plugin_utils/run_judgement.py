"""Judge a stored run: its results, the baselines, the rules with each host's overrides, each host's previous run."""
from __future__ import annotations

from typing import Dict, List, Mapping, Optional, Sequence

from ..module_utils.envelope_statuses import MEASURED_STATUSES
from .judge.fleet import judge_fleet
from .judge.model import Check, FleetJudgement, blocks_gate
from .judge.rules import CheckTexts
from .control_chars import terminal_text
from .rules_and_baselines import load_baselines, load_rules
from .probes.registry import probe_catalogue
from .report_parallel import run_over_the_cores
from .store.previous import find_previous_results, most_common_run
from .store.stored_run import RunModel, StoredEnvelopes
from .store.schemas import stored_envelope_problems


def host_inputs(run: RunModel, rule_overrides: Mapping[str, Mapping]) -> Dict[str, Dict]:
    return {
        host.name: {
            "envelopes": StoredEnvelopes(host.probes),
            "reached": host.state != "unreachable",
            "reason": "; ".join(host.reasons),
            "groups": list(host.groups),
            "rule_overrides": rule_overrides.get(host.name) or {},
            "not_run": host.inputs.get("not_run"),
        }
        for host in run.hosts
    }


def judge_run(run: RunModel, results_dir: str, rule_overrides: Mapping[str, Mapping],
              baselines_dir: Optional[str] = None, rules_path: Optional[str] = None,
              workers: Optional[int] = None) -> FleetJudgement:
    """Raises ValueError when the rules file is broken; a broken baseline file is reported, not fatal.
    workers: processes that judge the hosts' own checks (default: one per usable core, for runs large enough;
    report_parallel); the judgement is the same with any number."""
    baselines, baseline_problems = load_baselines(baselines_dir)
    rules = load_rules(rules_path)
    # Each probe a host measured now is compared with the newest earlier run that measured it (store/previous.py).
    measured = {host.name: [probe for probe, entry in host.probes.items() if entry.status in MEASURED_STATUSES] for host in run.hosts}
    previous = find_previous_results(results_dir, run.run_id, [host.name for host in run.hosts], check_envelope=stored_envelope_problems,
                                     wanted=measured)
    judgement = judge_fleet(run.run_id, host_inputs(run, rule_overrides), baselines, rules,
                            previous=previous.envelopes or None, previous_run_id=most_common_run(previous.run_ids),
                            previous_problems=previous.problems or None, catalogue=probe_catalogue(),
                            run_each=lambda count, job: run_over_the_cores(count, job, workers), baseline_problems=baseline_problems)
    # The rules in use name their checks; the default file still names the judge's own (fleet.*, host.* ...).
    titles = {metric_id: spec.title for metric_id, spec in probe_catalogue().metric_specs.items()}
    judgement.texts = CheckTexts(rules, load_rules(), metric_titles=titles) if rules_path else CheckTexts(rules, metric_titles=titles)
    judgement.unmatched_rules.extend(
        Check(id="baselines.load", host="", probe="", status="error",
              reason="%s; hosts of that SKU are compared with their peers only" % problem)
        for problem in baseline_problems)
    return judgement


def gate_lines(judgement: FleetJudgement) -> List[str]:
    """One line per host that fails the gate, with its reasons; control characters written as \\xNN."""
    return [terminal_text("%s: %s - %s" % (verdict.host, verdict.verdict, "; ".join(verdict.reasons) or "no reason recorded"))
            for verdict in judgement.hosts_worst_first() if blocks_gate(verdict)]


def verdict_lines(judgement: FleetJudgement, limit_reasons: int = 3) -> List[str]:
    """One line per host, worst first: its verdict and first reasons; control characters written as \\xNN."""
    lines = []
    for verdict in judgement.hosts_worst_first():
        reasons: Sequence[str] = verdict.reasons[:limit_reasons]
        more = len(verdict.reasons) - len(reasons)
        text = "; ".join(reasons) + (" (+%d more)" % more if more > 0 else "")
        lines.append(terminal_text("%s: %s%s" % (verdict.host, verdict.verdict, (" - " + text) if text else "")))
    return lines
