"""The fleet index: one row per host (its verdict, reasons, metrics and drift where the run was judged), the groups,
what to do first, and the run's notes, in HTML and Markdown."""
from __future__ import annotations

from typing import Any, Dict, List, Optional

from ..judge.model import GATING_VERDICTS, FleetJudgement, HostVerdict
from ..judge.weakened_rules import named_hosts
from ...module_utils.envelope_statuses import FAILED_STATUSES, STATUS_RANK
from ..probe_kit.registry import probe_catalogue, sections
from ..store.paths import DOSSIER_HTML_FILE, DOSSIER_MD_FILE
from ..store.stored_run import HostModel, RunModel
from ..unmatched_kinds import run_profile, unmeasured_probes
from .index_columns import fold_reasons, shown_metric_positions, split_metrics
from .markup import HTML, MARKDOWN, MarkdownText, flagged_markdown, href, markdown_link
from .verdicts import (NOT_JUDGED, VERDICT_FLAG, drift_notes, fold_unmatched, gate_sentence, headline, host_action,
                       metric_cell, metric_columns, proof_note, shown_reasons, statistics_rows, verdict_counts,
                       verdict_rank, verdict_view)

# The index's first screen lists this many hosts that did not pass, worst first; the table below has them all.
TODO_HOSTS = 10
# A rule the run disabled or downgraded names this many of its hosts in the index.
WEAKENED_HOSTS_NAMED = 20


def index_columns(host: HostModel) -> Dict[str, Any]:
    """The host's columns of the fleet index from the result of the probe that describes the machine, worked out once
    per host."""
    if host.index_columns is None:
        machine = probe_catalogue().machine
        entry = host.probes.get(machine.probe) if machine is not None else None
        if machine is None or machine.declaration.index_columns is None:
            host.index_columns = {}
        elif entry is None:
            host.index_columns = dict(machine.declaration.not_run_columns)
        else:
            host.index_columns = machine.declaration.index_columns(entry.data)
    return host.index_columns


def host_summary(host: HostModel, markdown: bool) -> Dict[str, Any]:
    columns = index_columns(host)
    dossier = href(host.dir_name, DOSSIER_MD_FILE if markdown else DOSSIER_HTML_FILE)
    summary = dict(columns, host=host, dossier_href=dossier, folded_state_reasons=fold_reasons(host.reasons))
    if markdown:
        summary["dossier_link"] = markdown_link(host.name, dossier)
    return summary


def groups_of(host: HostModel, verdict: Optional[HostVerdict]) -> List[str]:
    return list(host.groups) or (list(verdict.groups) if verdict is not None else [])


def judged_row(host: HostModel, judgement: FleetJudgement, metrics: List[Dict[str, str]], markdown: bool) -> Dict[str, Any]:
    verdict = judgement.hosts.get(host.name)
    view = verdict_view(verdict, include_checks=False)
    reasons, more = shown_reasons(view["reasons"])
    action = host_action(verdict, judgement.texts)
    row = dict(host_summary(host, markdown), verdict=view["verdict"], flag=view["flag"], sku=view["sku"], action=action,
               sku_reason=view["sku_reason"], reasons=reasons, more_reasons=more, all_reasons=view["reasons"],
               folded_reasons=fold_reasons(view["reasons"]), proof_note=proof_note(verdict),
               groups=groups_of(host, verdict), drift=drift_notes(verdict),
               metrics=[metric_cell(judgement, verdict, column["metric"], column["unit"]) if verdict is not None
                        else {"text": "—", "note": "", "flag": "", "title": ""} for column in metrics])
    if markdown:
        row["metric_cells"] = [flagged_markdown(cell["text"], cell["note"], cell["flag"]) for cell in row["metrics"]]
        row["drift_cell"] = MarkdownText("; ".join(flagged_markdown(note["text"], "", note["flag"]) for note in row["drift"])) \
            if row["drift"] else "—"
    return row


def _judged_index_context(run: RunModel, judgement: FleetJudgement, markdown: bool) -> Dict[str, Any]:
    metrics = metric_columns(judgement)
    rows = [judged_row(host, judgement, metrics, markdown) for host in run.hosts]
    rows.sort(key=lambda row: (-verdict_rank(row["verdict"]), row["host"].name))
    shown = shown_metric_positions(metrics, [[cell["flag"] for cell in row["metrics"]] for row in rows])
    for row in rows:
        cells = row["metric_cells"] if markdown else row["metrics"]
        row["shown_metrics"], row["other_metrics"] = split_metrics(cells, metrics, shown)
        row["other_flagged"] = sum(1 for position, cell in enumerate(row["metrics"])
                                   if position not in shown and cell["flag"] in ("bad", "warn"))
    groups: Dict[str, List[Dict[str, Any]]] = {}
    for row in rows:
        for group in row["groups"] or ["(no group)"]:
            groups.setdefault(group, []).append(row)
    group_rows = [{"name": name, "total": len(members),
                   "counts": [(verdict, count) for verdict, count in verdict_counts(row["verdict"] for row in members) if count],
                   "not_pass": [row["host"].name for row in members if row["verdict"] != "pass"]}
                  for name, members in sorted(groups.items())]
    profile, probes = run_profile(run)
    unmatched, not_run = fold_unmatched(judgement.unmatched_rules, profile, probes, judgement.texts, unmeasured_probes(run))
    counts = verdict_counts(row["verdict"] for row in rows)
    todo = sorted((row for row in rows if row["verdict"] != "pass"),
                  key=lambda row: (-verdict_rank(row["verdict"]), row["action"]["rank"], row["host"].name))
    return {"run": run, "judgement": judgement, "rows": rows, "metrics": [metrics[position] for position in shown],
            "other_metrics": len(metrics) - len(shown), "groups": group_rows,
            "counts": counts, "headline": headline(counts), "verdict_flag": VERDICT_FLAG, "gate": gate_sentence(judgement),
            "todo": todo[:TODO_HOSTS], "todo_more": max(0, len(todo) - TODO_HOSTS), "not_run": not_run, "profile": profile,
            "failed": [row for row in rows if row["verdict"] in GATING_VERDICTS or row["verdict"] == NOT_JUDGED],
            "unmatched": unmatched, "statistics": statistics_rows(judgement), "setting_minorities": judgement.setting_minorities,
            "slow_probes": judgement.slow_probes,
            "previous_run_id": judgement.previous_run_id, "cross_host": _fleet_views(run),
            "versions": ", ".join(run.collection_versions()) or "not recorded", "weakened": weakened_rows(judgement)}


def weakened_rows(judgement: FleetJudgement) -> List[Dict[str, Any]]:
    """The index's rows of the shipped rules the run disabled or downgraded: each with its title and its hosts named
    (at most WEAKENED_HOSTS_NAMED; fleet.json lists them all)."""
    return [dict(entry, title=judgement.texts.of(entry["rule"]).title, host_count=len(entry["hosts"]),
                 hosts_text=named_hosts(entry["hosts"], WEAKENED_HOSTS_NAMED)) for entry in judgement.weakened_rules]


def _fleet_views(run: RunModel) -> List[Dict[str, Any]]:
    """The rows of every probe section that shows the probe across hosts (ProbeSection.fleet_view)."""
    return [row for section in sections().values() if section.fleet_view is not None for row in section.fleet_view(run.hosts)]


def _index_context(run: RunModel, markdown: bool, previous_run_id: Optional[str] = None) -> Dict[str, Any]:
    rows = [host_summary(host, markdown) for host in run.hosts_worst_first()]
    groups = []
    for name, hosts in run.groups().items():
        counts: Dict[str, int] = {}
        for host in hosts:
            counts[host.state] = counts.get(host.state, 0) + 1
        groups.append({"name": name, "total": len(hosts),
                       "counts": sorted(counts.items(), key=lambda item: -STATUS_RANK.get(item[0], 0)),
                       "not_ok": [host.name for host in hosts if host.state != "ok"]})
    return {"run": run, "rows": rows, "counts": run.counts_by_state(), "groups": groups,
            "failed": [row for row in rows if row["host"].state in FAILED_STATUSES],
            "previous_run_id": previous_run_id,
            "versions": ", ".join(run.collection_versions()) or "not recorded"}


def render_fleet_index_html(run_model: RunModel, judgement: Optional[FleetJudgement] = None,
                            previous_run_id: Optional[str] = None) -> str:
    if judgement is not None:
        return HTML.get_template("index_judged.html.j2").render(**_judged_index_context(run_model, judgement, markdown=False))
    return HTML.get_template("index.html.j2").render(**_index_context(run_model, markdown=False, previous_run_id=previous_run_id))


def render_fleet_index_markdown(run_model: RunModel, judgement: Optional[FleetJudgement] = None,
                                previous_run_id: Optional[str] = None) -> str:
    if judgement is not None:
        return MARKDOWN.get_template("index_judged.md.j2").render(**_judged_index_context(run_model, judgement, markdown=True))
    return MARKDOWN.get_template("index.md.j2").render(**_index_context(run_model, markdown=True, previous_run_id=previous_run_id))
