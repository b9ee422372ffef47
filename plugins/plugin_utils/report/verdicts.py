"""What the report shows of the judge's output: a host's verdict and checks, and the fleet's metric columns.

Pure Python (the judge's model and the report's value formatting); no Jinja, no Ansible.
"""
from __future__ import annotations

import functools
import re
from typing import Any, Callable, Dict, Iterable, List, Mapping, Optional, Sequence, Tuple, Union

from ..judge.busy import NOT_VALIDATED
from ..judge.drift import NO_EARLIER_RUN
from ..judge.model import VERDICT_RANK, VERDICTS, Check, FleetJudgement, HostVerdict, blocks_gate
from ..judge.rules import ACTION_RANK, ACTION_WORDS, CheckTexts
from .number_format import format_quantity
from .values import format_number, format_value
from ..unmatched_kinds import NOT_MEASURED, NOT_RUN_BY_PROFILE, unmatched_kind

NOT_JUDGED = "not judged"
NOT_JUDGED_REASON = "the judge gave no verdict for this host (its results were found, but it was not judged)"
# A host the judge did not see is as bad as an error: nobody vouched for it.
VERDICT_ORDER = {verdict: VERDICT_RANK[verdict] for verdict in VERDICTS}
VERDICT_ORDER[NOT_JUDGED] = VERDICT_RANK["error"]
# Checks worst first; a skip says something was not checked, so it comes before a pass.
STATUS_ORDER = {"fail": 0, "error": 1, "warn": 2, "skip": 3, "pass": 4}
STATUS_FLAG = {"fail": "bad", "error": "bad", "warn": "warn", "skip": "na", "pass": ""}
VERDICT_FLAG = {"fail": "bad", "error": "bad", "unreachable": "bad", "not_validated": "bad", NOT_JUDGED: "bad", "warn": "warn", "pass": ""}
FLEET_PREFIX = "fleet."
DRIFT_PREFIX = "drift."
# The judge's drift check that says why a comparison is missing (no earlier run, or none that measured a probe).
PREVIOUS_RUN_CHECK = "drift.previous_run"
INDEX_REASONS = 1
# A value longer than this is shown folded (<details> in HTML) and only once where it did not change.
LONG_VALUE = 80
# The judge's words for a peer comparison that had too few values (judge/stats.py).
_NOT_ENOUGH_PEERS = re.compile(r"not enough peers: (\d+) value\(s\), at least (\d+) needed")
_DEFAULT_TEXTS = CheckTexts()
# A host's headline in words: "3 hosts: 1 failed, 2 passed."
VERDICT_WORDS = {"fail": "failed", "error": "in error", "unreachable": "unreachable", "not_validated": "not validated",
                 "warn": "warned", "pass": "passed", NOT_JUDGED: "not judged"}
# What a not-validated host's action is where no check of its own explains it (no reference, a probe that did not run).
UNPROVEN_ACTION = "fix_config"


def plural(count: int, noun: str, nouns: str = "") -> str:
    """"1 host", "2 hosts"."""
    return "%d %s" % (count, noun if count == 1 else (nouns or noun + "s"))


def is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def value_text(value: Any, unit: str) -> str:
    """A check's value or reference with its unit; "—" when there is none."""
    if value is None:
        return "—"
    if is_number(value):
        return format_quantity(value, unit) if unit else format_number(value)
    text = format_value(None, value)
    return "%s %s" % (text, unit) if unit else text


def gpu_text(check: Check) -> str:
    if check.device is not None:  # a metric keyed by a device that is not a GPU (a port, a drive)
        return check.device
    if check.gpu_index is None and not check.gpu_uuid:
        return "—"
    index = "GPU %s" % check.gpu_index if check.gpu_index is not None else "GPU"
    return "%s (%s)" % (index, check.gpu_uuid) if check.gpu_uuid else index


def check_sort_key(check: Check) -> Tuple[int, str, int, str, str]:
    return (STATUS_ORDER.get(check.status, 1), check.id,
            check.gpu_index if check.gpu_index is not None else -1, check.gpu_uuid or "", check.device or "")


def check_row(check: Check, texts: Optional[CheckTexts] = None) -> Dict[str, Any]:
    """A check as the dossier shows it: its title (the id beside it), evidence, and what to do when it did not pass.

    An unchanged long value (a drift check of the kernel command line) is shown once: the reference says "unchanged"
    and the reason leaves the value out; "long" marks a value to fold.
    """
    text = (texts or _DEFAULT_TEXTS).of(check.id)
    value, reference, reason = value_text(check.value, check.unit), value_text(check.reference, check.unit), check.reason
    unchanged = check.value is not None and check.value == check.reference and len(value) > LONG_VALUE
    if unchanged:
        reference = "unchanged"
        reason = reason.replace(format_value(None, check.value) if not is_number(check.value) else value, "(the value shown)")
    failing = check.status in ("fail", "error", "warn")
    action = ACTION_WORDS.get(check.action, "") if check.action else text.action_words
    return {
        "status": check.status, "flag": STATUS_FLAG.get(check.status, "bad"), "id": check.id, "probe": check.probe,
        "title": text.title, "remedy": (check.remedy or text.remedy) if failing else "", "action": action if failing else "",
        "because": check.because, "because_title": (texts or _DEFAULT_TEXTS).of(check.because).title if check.because else "",
        "gpu": gpu_text(check), "value": value, "long": len(value) > LONG_VALUE,
        "reference": reference, "reference_long": len(reference) > LONG_VALUE, "reference_source": check.reference_source or "—",
        "threshold": check.threshold or "—", "reason": reason,
    }


HostsOfSku = Union[int, Callable[[], Optional[int]], None]


def peer_fold(checks: Sequence[Check], hosts_of_sku: HostsOfSku = None) -> Tuple[List[Check], Optional[Dict[str, Any]]]:
    """(the checks left, one line for the fleet comparisons that had too few peers to compare, or None).

    "compared with peers: needs >= 3 hosts of the SKU, this run has 1", with the checks folded into it. hosts_of_sku
    may be a function: it is called only when there is something to fold (counting is a pass over the whole fleet).
    """
    folded, kept, needed = [], [], 0
    for check in checks:
        found = _NOT_ENOUGH_PEERS.search(check.reason or "") if check.status == "skip" else None
        if found and check.id.startswith(FLEET_PREFIX):
            folded.append(check)
            needed = max(needed, int(found.group(2)))
        else:
            kept.append(check)
    if not folded:
        return kept, None
    if callable(hosts_of_sku):
        hosts_of_sku = hosts_of_sku()
    has = "this run has %d" % hosts_of_sku if hosts_of_sku is not None else "too few in this run"
    return kept, {"text": "compared with peers: needs \u2265 %d hosts of the SKU, %s" % (needed, has), "count": len(folded),
                  "ids": sorted({check.id for check in folded})}


def status_counts(checks: Iterable[Check]) -> List[Tuple[str, int]]:
    counts: Dict[str, int] = {}
    for check in checks:
        counts[check.status] = counts.get(check.status, 0) + 1
    return sorted(counts.items(), key=lambda item: STATUS_ORDER.get(item[0], 1))


def proofs_view(verdict: HostVerdict, texts: Optional[CheckTexts] = None) -> Dict[str, Any]:
    """What the host's profile promised, by state (proven, not_proven, not_promised), each with the check's title."""
    texts = texts or _DEFAULT_TEXTS
    view: Dict[str, Any] = {"proven": [], "not_proven": [], "not_promised": []}
    for proof in verdict.proofs:
        view.setdefault(proof.state, []).append(dict(proof.to_dict(), title=texts.of(proof.check).title))
    # not promised, one line per reason: "GPU-to-GPU bandwidth, All-reduce correct (measured between GPUs: ...)"
    reasons: Dict[str, List[str]] = {}
    for entry in view["not_promised"]:
        reasons.setdefault(entry["because"], []).append(entry["title"])
    view["not_promised_by_reason"] = [{"titles": titles, "because": because} for because, titles in reasons.items()]
    # not proven, one line per identical reason and fix (the gemm probe's one missing torch leaves five headlines
    # unproven in the same words); a headline with words of its own (a busy GPU's measured value) keeps its own line
    same: Dict[Tuple[str, str], List[Dict[str, Any]]] = {}
    for entry in view["not_proven"]:
        same.setdefault((entry["because"], entry["fix"]), []).append(entry)
    view["not_proven_by_reason"] = [{"titles": [entry["title"] for entry in entries], "checks": [entry["check"] for entry in entries],
                                     "because": because, "fix": fix} for (because, fix), entries in same.items()]
    return view


def gate_view(verdict: HostVerdict, enforced: bool) -> Dict[str, Any]:
    """Whether the gate refuses the host, whether the run enforced it, and why in one line."""
    refused = blocks_gate(verdict)
    why = verdict.reasons[0] if verdict.reasons else "no reason recorded"
    return {"refused": refused, "enforced": enforced, "why": why if refused else ""}


def proof_note(verdict: Optional[HostVerdict]) -> str:
    """"proven 9 of 12 promised headlines; not proven: membw.bandwidth, ..." ("" where nothing was promised)."""
    if verdict is None or not verdict.proofs:
        return ""
    proven, unproven = verdict.proofs_in("proven"), verdict.proofs_in("not_proven")
    promised = len(proven) + len(unproven)
    words = "proven %d of %d promised headline%s" % (len(proven), promised, "" if promised == 1 else "s")
    return words + ("; not proven: %s" % ", ".join(proof.check for proof in unproven) if unproven else "")


def gate_sentence(judgement: FleetJudgement) -> Tuple[str, str]:
    """(what the gate did to this run in one sentence, its flag) for the index's first screen."""
    refused = [verdict.host for verdict in judgement.hosts_worst_first() if blocks_gate(verdict)]
    shown = ", ".join(refused[:10]) + (" and %d more" % (len(refused) - 10) if len(refused) > 10 else "")
    if not judgement.gate_enforced:
        return ("The gate is off (gpufleet_gate: false): this run reports only%s." % (
            "; it would refuse %s: %s" % (plural(len(refused), "host"), shown) if refused else ""), "warn" if refused else "")
    if refused:
        return ("Refused by the gate: %s of %d (%s); the run exits 2. Each dossier says what is not proven and how to fix it."
                % (plural(len(refused), "host"), len(judgement.hosts), shown), "bad")
    return ("The gate passed every host: each proved every headline its profile promises.", "")


def verdict_view(verdict: Optional[HostVerdict], include_checks: bool = True, texts: Optional[CheckTexts] = None,
                 hosts_of_sku: HostsOfSku = None, gate_enforced: bool = True) -> Dict[str, Any]:
    """The dossier's first section: verdict, whether the gate refused it, what the profile's pass proves and what it
    does not, the checks that did not pass (evidence and remedy), SKU (or why it is unknown), then every other check
    worst first, the peer comparisons that had too few hosts folded into one line."""
    if verdict is None:
        return {"verdict": NOT_JUDGED, "flag": VERDICT_FLAG[NOT_JUDGED], "reasons": [NOT_JUDGED_REASON],
                "sku": "unknown", "sku_reason": "not judged", "checks": [], "failing": [], "others": [], "peers": None,
                "total": 0, "status_counts": [], "changes": [], "changes_since": "", "changes_missing": [],
                "proofs": {"proven": [], "not_proven": [], "not_promised": [], "not_promised_by_reason": [], "not_proven_by_reason": []},
                "gate": {"refused": True, "enforced": gate_enforced, "why": NOT_JUDGED_REASON}}
    checks = sorted(verdict.checks, key=check_sort_key) if include_checks else []
    rows = [check_row(check, texts) for check in checks]
    kept, peers = peer_fold(checks, hosts_of_sku)
    kept_ids = {id(check) for check in kept}
    failing = failing_with_consequences(rows)
    folded = {id(row) for shown in failing for row in shown["consequences"]}
    others = [row for check, row in zip(checks, rows) if id(check) in kept_ids and row["status"] not in ("fail", "error", "warn")
              and id(row) not in folded]
    return {
        "verdict": verdict.verdict, "flag": VERDICT_FLAG.get(verdict.verdict, "bad"), "reasons": list(verdict.reasons),
        "sku": verdict.sku or "unknown", "sku_reason": verdict.sku_reason or ("" if verdict.sku else "no reason given"),
        "checks": rows, "failing": failing, "others": others,
        "peers": peers, "total": len(rows), "status_counts": status_counts(checks),
        "changes": before_after_rows(verdict), "changes_since": compared_runs(verdict), "changes_missing": not_compared(verdict),
        "proofs": proofs_view(verdict, texts), "gate": gate_view(verdict, gate_enforced),
    }


def failing_with_consequences(rows: List[Dict[str, Any]]) -> List[Dict[str, Any]]:
    """The rows that did not pass, root causes only, each with the rows that follow from it under "consequences"
    (one cause, one row: judge/causes.py), the measurements a busy GPU left not validated (skips, judge/busy.py) among
    them. A consequence whose root is not among the rows stays a row of its own."""
    failing = [row for row in rows if row["status"] in ("fail", "error", "warn")]
    following: Dict[str, List[Dict[str, Any]]] = {}
    root_ids = {row["id"] for row in failing if not row["because"]}
    for row in rows:
        if row["because"] in root_ids and (row["status"] != "skip" or row["reason"].startswith(NOT_VALIDATED)):
            following.setdefault(row["because"], []).append(row)
    shown, given = [], set()
    for row in failing:
        if row["because"] in root_ids:
            continue
        consequences = following.get(row["id"], []) if row["id"] not in given and not row["because"] else []
        given.add(row["id"])
        shown.append(dict(row, consequences=consequences))
    return shown


def root_actions(verdict: HostVerdict, texts: Optional[CheckTexts] = None) -> List[str]:
    """The action of each root cause of the verdict (a check that does not pass and follows from none), in the order of
    its reasons: what the act reads to leave a host whose only cause is a busy GPU in service."""
    texts = texts or _DEFAULT_TEXTS
    roots = [check for check in verdict.checks if check.status in ("fail", "error", "warn") and not check.because]
    roots.sort(key=lambda check: STATUS_ORDER[check.status])
    actions = [check.action or texts.of(check.id).action for check in roots]
    # a promise not proven for want of a reference or a result is a root cause too, whatever the busy GPU explains
    return actions + [UNPROVEN_ACTION for proof in verdict.proofs_in("not_proven") if not proof.root]


def host_action(verdict: Optional[HostVerdict], texts: Optional[CheckTexts] = None) -> Dict[str, str]:
    """What to do about a host that did not pass, from its worst check: the action in words, its remedy, the check."""
    if verdict is None:
        return {"action": "re-run", "remedy": "judge the run again (playbooks/report.yml)", "check": "", "title": "", "reason": "",
                "rank": ACTION_RANK["rerun"]}
    texts = texts or _DEFAULT_TEXTS
    failing = [check for check in verdict.checks if check.status in ("fail", "error", "warn") and not check.because]
    unproven = verdict.proofs_in("not_proven")
    if verdict.verdict == "not_validated" and unproven:
        first = unproven[0]
        root = next((check for check in verdict.checks if first.root and check.id == first.root), None)
        if root is not None:
            failing = [root]
        else:
            text = texts.of(first.check)
            return {"action": ACTION_WORDS[UNPROVEN_ACTION], "remedy": first.fix, "check": first.check, "title": text.title,
                    "reason": "not proven: %s" % first.because, "rank": ACTION_RANK[UNPROVEN_ACTION]}
    if verdict.verdict == "pass" or not failing:
        return {"action": "none" if verdict.verdict == "pass" else "", "remedy": "", "check": "", "title": "", "reason": "", "rank": ACTION_RANK[""] + 1}

    def action_of(check: Check) -> str:
        return check.action or texts.of(check.id).action

    worst = min(failing, key=lambda check: (STATUS_ORDER.get(check.status, 1), ACTION_RANK.get(action_of(check), ACTION_RANK[""]),
                                            check_sort_key(check)))
    text = texts.of(worst.id)
    action = action_of(worst)
    return {"action": ACTION_WORDS.get(action, "") or "look", "remedy": worst.remedy or text.remedy, "check": worst.id,
            "title": text.title, "reason": worst.reason, "rank": ACTION_RANK.get(action, ACTION_RANK[""])}


def headline(counts: Sequence[Tuple[str, int]]) -> str:
    """"3 hosts: 1 failed, 2 passed." (every verdict with hosts, worst first)."""
    total = sum(count for unused_verdict, count in counts)
    parts = ["%d %s" % (count, VERDICT_WORDS.get(verdict, verdict)) for verdict, count in counts if count]
    return "%s: %s." % (plural(total, "host"), ", ".join(parts)) if parts else "%s." % plural(total, "host")


def not_compared(verdict: HostVerdict) -> List[str]:
    """Why the before-and-after table lacks rows: the judge's drift.previous_run reasons (no earlier run, or none that
    measured some probe); with no drift check at all (no host of the run had an earlier run, so none was compared),
    that there was no earlier run. An unreachable host measured nothing to compare."""
    reasons = [check.reason for check in verdict.checks if check.id == PREVIOUS_RUN_CHECK]
    if not reasons and verdict.verdict != "unreachable" and not any(check.id.startswith(DRIFT_PREFIX) for check in verdict.checks):
        reasons.append(NO_EARLIER_RUN)
    return reasons


def compared_runs(verdict: HostVerdict) -> str:
    """The earlier runs the drift checks compared with, for the before-and-after heading: "run A", or, when the probes
    came from different runs (the newest earlier run that measured each), "run A (health), run B (membw, tuning)"; ""
    when no check names its run as the judge does ("run <id>"), and the heading then names the previous run."""
    probes_by_run: Dict[str, set] = {}
    for check in verdict.checks:
        if check.id.startswith(DRIFT_PREFIX) and check.id != PREVIOUS_RUN_CHECK and check.reference_source.startswith("run "):
            probes_by_run.setdefault(check.reference_source, set()).add(check.probe or "host")
    if len(probes_by_run) <= 1:
        return "".join(probes_by_run)
    return ", ".join("%s (%s)" % (run, ", ".join(sorted(probes))) for run, probes in sorted(probes_by_run.items(), reverse=True))


def before_after_rows(verdict: HostVerdict, texts: Optional[CheckTexts] = None) -> List[Dict[str, Any]]:
    """Every drift.* check as a before/after row, changes first: what the post-upgrade comparison shows.

    A value that did not change is shown once ("unchanged" before it); a long one is marked to fold, and the reason
    does not repeat it.
    """
    rows = []
    for check in sorted((check for check in verdict.checks if check.id.startswith(DRIFT_PREFIX)),
                        key=lambda check: (check.status == "pass", check.status == "skip", check.id, check.gpu_index or -1)):
        if check.id == PREVIOUS_RUN_CHECK:
            continue
        row = check_row(check, texts)
        before, after = value_text(check.reference, check.unit), value_text(check.value, check.unit)
        unchanged = check.value is not None and check.value == check.reference
        what = check.id[len(DRIFT_PREFIX):]
        rows.append({"what": what, "title": (texts or _DEFAULT_TEXTS).title_of(what),
                     "gpu": str(check.gpu_index) if check.gpu_index is not None else "—",
                     "before": "unchanged" if unchanged else before, "after": after, "unchanged": unchanged,
                     "before_long": len(before) > LONG_VALUE and not unchanged, "after_long": len(after) > LONG_VALUE,
                     "status": check.status, "flag": STATUS_FLAG.get(check.status, "bad"), "reason": row["reason"]})
    return rows


_TRAILING_INDEXES = re.compile(r"(\[\d+\])+$")


@functools.lru_cache(maxsize=65536)  # every host of a fleet has the same paths
def _leaf_key(path: str) -> str:
    return _TRAILING_INDEXES.sub("", path).rsplit(".", 1)[-1]


def measurement_references(checks: Sequence[Check], probe: str, paths: Sequence[str]) -> Dict[str, List[Dict[str, Any]]]:
    """Check rows by the JSON path of the measurement they judged, for the "every measurement" table.

    A check that names its path (an attribute `path`) pairs with that row. Otherwise the last part of its id must
    name exactly one leaf of the probe's data (under gpus[<its GPU index>] when it has one); else it stays unpaired
    and shows only in the checks table.
    """
    paired: Dict[str, List[Dict[str, Any]]] = {}
    known = set(paths)
    paths_by_leaf: Dict[str, List[str]] = {}
    for check in sorted(checks, key=check_sort_key):
        if check.probe != probe or check.id.startswith((FLEET_PREFIX, DRIFT_PREFIX)):
            continue
        path = getattr(check, "path", None)
        if not (isinstance(path, str) and path in known):
            if not paths_by_leaf:  # built at the first check that names no path of its own
                for candidate in paths:
                    paths_by_leaf.setdefault(_leaf_key(candidate), []).append(candidate)
            leaf = check.id.rsplit(".", 1)[-1]
            prefix = "gpus[%d]" % check.gpu_index if check.gpu_index is not None else ""
            candidates = [candidate for candidate in paths_by_leaf.get(leaf, ()) if candidate.startswith(prefix)]
            if len(candidates) != 1:
                continue
            path = candidates[0]
        paired.setdefault(path, []).append(check_row(check))
    return paired


def verdict_rank(verdict: str) -> int:
    return VERDICT_ORDER.get(verdict, VERDICT_ORDER[NOT_JUDGED])


def verdict_counts(verdicts: Iterable[str]) -> List[Tuple[str, int]]:
    """(verdict, count), worst first, every verdict of the model (zero included) and "not judged" when present."""
    counts = {verdict: 0 for verdict in VERDICTS}
    for verdict in verdicts:
        counts[verdict] = counts.get(verdict, 0) + 1
    if not counts.get(NOT_JUDGED):
        counts.pop(NOT_JUDGED, None)
    return sorted(counts.items(), key=lambda item: -verdict_rank(item[0]))


def metric_of(check_id: str) -> Tuple[str, str]:
    """("fleet" | "drift" | "", metric id): fleet.<metric> and drift.<metric> checks compare the metric <metric>."""
    for kind, prefix in (("fleet", FLEET_PREFIX), ("drift", DRIFT_PREFIX)):
        if check_id.startswith(prefix):
            return kind, check_id[len(prefix):]
    return "", check_id


def metric_columns(judgement: FleetJudgement) -> List[Dict[str, str]]:
    """Every numeric metric the judge compared across hosts: in fleet_statistics, or held by a numeric fleet.* check."""
    units: Dict[str, str] = {}
    for metrics in judgement.fleet_statistics.values():
        for metric, statistics in metrics.items():
            unit = statistics.get("unit") if isinstance(statistics, dict) else None
            if not units.get(metric):
                units[metric] = str(unit or "")
    for verdict in judgement.hosts.values():
        for check in verdict.checks:
            kind, metric = metric_of(check.id)
            if kind == "fleet" and (is_number(check.value) or is_number(check.reference)) and not units.get(metric):
                units[metric] = check.unit
    return [{"metric": metric, "unit": units[metric], "title": judgement.texts.title_of(metric)} for metric in sorted(units)]


def _worst(checks: List[Check]) -> Optional[Check]:
    """The most severe check that compared something; a skip only when nothing was compared."""
    return min(checks, key=lambda check: (check.status == "skip", check_sort_key(check))) if checks else None


def _median(judgement: FleetJudgement, sku: Optional[str], metric: str, fallback: Optional[Check]) -> Optional[Any]:
    statistics = judgement.fleet_statistics.get(sku or "unknown", {}).get(metric)
    if isinstance(statistics, dict) and statistics.get("median") is not None:
        return statistics["median"]
    return fallback.reference if fallback is not None else None


def metric_cell(judgement: FleetJudgement, verdict: HostVerdict, metric: str, unit: str) -> Dict[str, str]:
    """A host's value of a metric beside the fleet median; flagged when the host is an outlier or drifted."""
    by_kind: Dict[str, List[Check]] = {"fleet": [], "drift": [], "": []}
    for check in verdict.checks:
        kind, check_metric = metric_of(check.id)
        if check_metric == metric:
            by_kind[kind].append(check)
    fleet, drift = _worst(by_kind["fleet"]), _worst(by_kind["drift"])
    shown = fleet or _worst(by_kind[""]) or drift
    median = _median(judgement, verdict.sku, metric, fleet)
    notes = []
    if shown is not None and shown.gpu_index is not None:
        count = len(by_kind["fleet"]) if shown is fleet else 1
        notes.append("GPU %s%s" % (shown.gpu_index, " (worst of %d)" % count if count > 1 else ""))
    if median is not None:
        notes.append("median %s" % value_text(median, unit))
    if drift is not None and drift.status != "pass":
        notes.append("drift: %s, previous %s" % (drift.status, value_text(drift.reference, drift.unit)))
    flags = [STATUS_FLAG.get(check.status, "bad") for check in (fleet, drift) if check is not None]
    flag = "bad" if "bad" in flags else ("warn" if "warn" in flags else "")
    reasons = [check.reason for check in (fleet, drift) if check is not None and check.status not in ("pass", "skip")]
    if shown is not None and shown.status == "skip" and shown.value is None:
        text = "not compared"
        reasons.append(shown.reason)
    else:
        text = value_text(shown.value, shown.unit or unit) if shown is not None else "—"
    return {"text": text, "note": "; ".join(notes), "flag": flag, "title": " ".join(reasons)}


def drift_notes(verdict: Optional[HostVerdict]) -> List[Dict[str, str]]:
    """Every drift.* check that did not pass: what changed since the previous run."""
    if verdict is None:
        return []
    return [{"text": "%s%s: %s (previous %s)" % (check.id[len(DRIFT_PREFIX):],
                                                 " GPU %s" % check.gpu_index if check.gpu_index is not None else "",
                                                 value_text(check.value, check.unit), value_text(check.reference, check.unit)),
             "flag": STATUS_FLAG.get(check.status, "bad"), "reason": check.reason}
            for check in sorted(verdict.checks, key=check_sort_key)
            if check.id.startswith(DRIFT_PREFIX) and check.status not in ("pass", "skip")]


def statistics_rows(judgement: FleetJudgement) -> List[Dict[str, str]]:
    rows = []
    for sku, metrics in sorted(judgement.fleet_statistics.items()):
        for metric, statistics in sorted(metrics.items()):
            statistics = statistics if isinstance(statistics, dict) else {}
            unit = str(statistics.get("unit") or "")
            rows.append({"sku": sku, "metric": metric, "median": value_text(statistics.get("median"), unit),
                         "mad": value_text(statistics.get("mad"), unit), "count": value_text(statistics.get("count"), ""),
                         "hosts": value_text(statistics.get("hosts"), "")})
    return rows


def fold_unmatched(unmatched: Sequence[Check], profile: str, profile_probes: Optional[Sequence[str]],
                   texts: Optional[CheckTexts] = None,
                   unmeasured: Optional[Mapping[str, str]] = None) -> Tuple[List[Dict[str, str]], Optional[str]]:
    """(rules that matched nothing and are worth a look, one line for the rules that could not match anything).

    A rule whose probe gave no data anywhere (skip) and is not among the profile's probes is no finding: it is folded
    into "not run by profile quick: 40 rules of probes gemm, load, p2p". profile_probes None (a profile of the
    inventory's own, or none recorded): only its probes that no host ran are folded, said so. ``unmeasured`` maps a
    probe that ran but measured on no host (p2p on 1-GPU hosts) to the status it had; its rules fold into "not
    measured on any host: 3 rules of probe p2p (unavailable)". The sorting is unmatched_kinds.unmatched_kind's, which
    fleet.json, junit.xml and gpufleet.prom follow too.
    """
    texts = texts or _DEFAULT_TEXTS
    unmeasured = unmeasured or {}
    listed, folded, not_measured = [], [], []
    for check in unmatched:
        kind = unmatched_kind(check, profile_probes, unmeasured)
        if kind == NOT_RUN_BY_PROFILE:
            folded.append(check)
        elif kind == NOT_MEASURED:
            not_measured.append(check)
        else:
            listed.append({"id": check.id, "title": texts.of(check.id).title if check.probe else check.id, "probe": check.probe,
                           "status": check.status, "reason": check.reason})
    lines = []
    if folded:
        probes = ", ".join(sorted({check.probe for check in folded}))
        words = "not run by profile %s" % profile if profile_probes is not None and profile else \
            "not run in this run%s" % (" (profile %s)" % profile if profile else "")
        lines.append("%s: %s of %s %s" % (words, plural(len(folded), "rule"), "probe" if "," not in probes else "probes", probes))
    if not_measured:
        probes = sorted({check.probe for check in not_measured})
        lines.append("not measured on any host: %s of %s %s" % (
            plural(len(not_measured), "rule"), "probe" if len(probes) == 1 else "probes",
            ", ".join("%s (%s)" % (probe, unmeasured[probe]) for probe in probes)))
    return listed, "; ".join(lines) or None


def shown_reasons(reasons: Sequence[str], limit: int = INDEX_REASONS) -> Tuple[List[str], int]:
    """The first reasons for a one-line-per-host index, and how many more the dossier holds."""
    return list(reasons[:limit]), max(0, len(reasons) - limit)
