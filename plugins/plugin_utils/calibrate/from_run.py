"""Calibrate one SKU's baseline from a stored run: judge the run, take its healthy hosts of the SKU, and per headline
metric the median over them, refused with fewer than 3 hosts, a spread above the metric's drift tolerance (naming the
outliers) or a median below the SKU's datasheet floor. Nothing is written here (write.py writes)."""
from __future__ import annotations

import datetime
import os
from dataclasses import dataclass, field
from typing import Any, Dict, List, Mapping, Optional, Sequence

from ..collection_info import collection_version
from ..metric_spec import MetricSpec
from ..report.number_format import format_quantity
from ..probe_kit.registry import declarations, judging_of, probe_catalogue
from ..rules_and_baselines import default_baselines_dir, load_baselines, load_rules, load_yaml
from ..run_judgement import judge_run
from ..store.paths import result_file_name, run_dir
from ..store.stored_run import StoredEnvelopes, load_run
from . import baseline_file, host_values, identity
from .spread import MIN_HOSTS, SPREAD_MEASURE, Spread, percent, rounded, spread_of
from .write import SKU_ID

CONDITION_TOLERANCE = 0.01  # judge/measurement.py Condition's: a reference shares a condition within 1 %


class CalibrationRefused(ValueError):
    """The calibration cannot start (no such run, a broken starting baseline ...)."""


@dataclass
class KeyResult:
    key: str
    metric: MetricSpec
    values: Dict[str, float]
    spread: Optional[Spread] = None
    refused: str = ""
    entry: Optional[Dict[str, Any]] = None
    left_out: List[str] = field(default_factory=list)  # "host (why)" of the healthy hosts that gave no value

    def line(self) -> str:
        head = "known_good.%s (%s)" % (self.key, self.metric.id)
        if self.spread is None:
            return "%s: refused: %s" % (head, self.refused)
        words = "%s: median %s over %d hosts, spread %s (tolerance %s)%s" % (
            head, format_quantity(self.spread.median, self.metric.unit), len(self.values), percent(self.spread.spread),
            percent(self.spread.tolerance), "; not from %s" % ", ".join(self.left_out) if self.left_out else "")
        return "%s: refused: %s" % (words, self.refused) if self.refused else words


@dataclass
class Calibration:
    sku: str
    run_id: str
    start: str                                   # the file it started from, or how the new file was made
    hosts: List[str] = field(default_factory=list)
    left_out: Dict[str, str] = field(default_factory=dict)
    keys: List[KeyResult] = field(default_factory=list)
    not_measured: List[str] = field(default_factory=list)
    refusals: List[str] = field(default_factory=list)
    notes: List[str] = field(default_factory=list)
    document: Optional[Dict[str, Any]] = None
    text: Optional[str] = None

    def lines(self) -> List[str]:
        lines = ["calibrating %s from run %s (starting from %s): %d healthy host(s)%s" % (
            self.sku, self.run_id, self.start, len(self.hosts), ": " + ", ".join(self.hosts) if self.hosts else "")]
        lines += ["left out %s: %s" % (host, why) for host, why in sorted(self.left_out.items())]
        lines += [key.line() for key in self.keys]
        if self.not_measured:
            lines.append("not measured in this run, kept as the starting file has them (or absent): %s" % ", ".join(self.not_measured))
        lines += self.notes
        lines += ["refused: %s" % refusal for refusal in self.refusals]
        return lines


def calibrate(results_dir: str, run_id: str, sku: str, hosts: Sequence[str] = (), baselines_dir: Optional[str] = None,
              rules_path: Optional[str] = None, facts: Optional[Mapping[str, Any]] = None,
              rule_overrides: Optional[Mapping[str, Mapping]] = None) -> Calibration:
    """The calibration of sku from the run; its refusals say why it holds no document. CalibrationRefused when it
    cannot start."""
    if not SKU_ID.match(sku or ""):
        raise CalibrationRefused("%r is not a baseline id (lower-case letters, digits and '-', e.g. h100-sxm)" % (sku,))
    try:
        path = run_dir(results_dir, run_id)
    except ValueError as exc:
        raise CalibrationRefused(str(exc)) from exc
    if not os.path.isdir(path):
        raise CalibrationRefused("run %s has no results in %s" % (run_id, path))
    run = load_run(path)
    judgement = judge_run(run, results_dir, rule_overrides or {}, baselines_dir, rules_path)
    baselines, problems = load_baselines(baselines_dir)
    start, start_shown = _raw_baseline(baselines_dir or default_baselines_dir(), sku)
    shipped, shipped_shown = _raw_baseline(default_baselines_dir(), sku)
    known = any(baseline["id"] == sku for baseline in baselines)
    if start is not None and not known:
        raise CalibrationRefused("the starting baseline %s does not load: %s" % (start_shown, "; ".join(
            [problem for problem in problems if sku + ".y" in problem] or problems or ["it is not among the loaded baselines"])))
    if start is None and shipped is not None:
        start, start_shown = shipped, "the collection's %s" % shipped_shown
    shipped_loaded = load_baselines()[0] if baselines_dir else baselines
    floors = _fail_bounds(baseline_file.floors(*[baseline for baseline in baselines + shipped_loaded if baseline["id"] == sku]),
                          load_rules(rules_path)["rules"])
    calibration = Calibration(sku, run.run_id, start_shown or "a new file: its match from the hosts, the rest from the facts")
    envelopes = {host.name: StoredEnvelopes(host.probes) for host in run.hosts}
    machine = probe_catalogue().machine
    gpus = {name: identity.host_gpus(machine, found) for name, found in envelopes.items()}
    candidates = _candidates(calibration, judgement, gpus, baselines, known, list(hosts))
    if calibration.refusals:
        return calibration
    for name in candidates:
        why = host_values.why_unhealthy(judgement.hosts[name])
        if why and name in hosts:
            calibration.refusals.append("%s, named in the host list, is not healthy: %s" % (name, why))
        elif why:
            calibration.left_out[name] = why
        else:
            calibration.hosts.append(name)
    if len(calibration.hosts) < MIN_HOSTS:
        calibration.refusals.append("%d healthy host(s) of %s in run %s%s; a baseline is the median of at least %d" % (
            len(calibration.hosts), sku, run.run_id, " (%s)" % ", ".join(calibration.hosts) if calibration.hosts else "", MIN_HOSTS))
    if calibration.refusals:
        return calibration
    values = _host_values(calibration.hosts, judgement, envelopes, rules_path)
    entries = _calibrate_keys(calibration, values, floors, results_dir, run)
    if not entries and not calibration.refusals:
        calibration.refusals.append("no headline metric was measured on the healthy hosts of run %s: run a profile with "
                                    "the measuring probes (acceptance)" % run.run_id)
    if calibration.refusals:
        return calibration
    document = _document(calibration, start, gpus, facts or {}, run.run_id)
    if document is None:
        return calibration
    document = baseline_file.with_known_good(document, entries)
    text = baseline_file.yaml_text(document, _header(calibration, results_dir, entries))
    calibration.refusals.extend("the calibrated file would not load: %s" % problem
                                for problem in baseline_file.load_problems(sku, text))
    if not calibration.refusals:
        calibration.document, calibration.text = document, text
    return calibration


def _raw_baseline(folder: str, sku: str):
    """(the file <sku>.yaml or .yml of folder as written, where it is in words) or (None, "")."""
    for suffix in (".yaml", ".yml"):
        path = os.path.join(folder, sku + suffix)
        if os.path.isfile(path) and not os.path.islink(path):
            shown = ("baselines/%s%s" % (sku, suffix) if os.path.realpath(folder) == os.path.realpath(default_baselines_dir())
                     else os.path.abspath(path))
            try:
                return load_yaml(path), shown
            except ValueError as exc:
                raise CalibrationRefused("the starting baseline %s does not load: %s" % (path, exc)) from exc
    return None, ""


def _candidates(calibration: Calibration, judgement: Any, gpus: Mapping[str, Any], baselines: List[Dict[str, Any]],
                known: bool, named: List[str]) -> List[str]:
    """The hosts of the SKU (the named ones among them, all named hosts being of it); refusals said on calibration."""
    unknown_names = sorted(set(named) - set(judgement.hosts))
    if unknown_names:
        calibration.refusals.append("host(s) %s named in the host list are not in run %s" % (", ".join(unknown_names), calibration.run_id))
        return []
    if known:
        found = {name: "" for name, verdict in judgement.hosts.items() if verdict.sku == calibration.sku}
    else:
        kinds = {name: identity.unknown_kind(gpus.get(name), baselines)[0] for name, verdict in judgement.hosts.items()
                 if verdict.sku is None}
        found = {name: kind for name, kind in kinds.items() if kind is not None}
    for name in named:
        if name not in found:
            verdict = judgement.hosts[name]
            calibration.refusals.append("%s, named in the host list, is not of %s: %s" % (
                name, calibration.sku, "its GPUs are %s" % verdict.sku if verdict.sku else verdict.sku_reason))
    chosen = sorted(name for name in found if not named or name in named)
    kinds = sorted({found[name].words() for name in chosen if found[name]})
    if len(kinds) > 1:
        calibration.refusals.append("the hosts no baseline knows hold %d kinds of GPU (%s): name the hosts of one kind "
                                    "(gpufleet_calibrate_hosts)" % (len(kinds), "; ".join(kinds)))
    if not chosen and not calibration.refusals:
        calibration.refusals.append("run %s has no host of %s%s" % (
            calibration.run_id, calibration.sku, "" if known else " and no host whose GPUs no baseline knows"))
    return chosen


def _host_values(hosts: List[str], judgement: Any, envelopes: Mapping[str, Any], rules_path: Optional[str]):
    baseline_checks = {}
    for probe in declarations():
        judging = judging_of(probe)
        if judging is not None and judging.baseline_checks:
            baseline_checks[probe] = dict(judging.baseline_checks)
    rule_metrics = host_values.headline_rules(load_rules(rules_path), baseline_checks)
    measurements_of = {probe: judging_of(probe).measurements for probe in baseline_checks}
    return {name: host_values.gpu_values(name, judgement.hosts[name], envelopes[name], measurements_of, rule_metrics)
            for name in hosts}


def _headline_metrics() -> List[MetricSpec]:
    specs = [spec for spec in probe_catalogue().metric_specs.values() if spec.baseline_key]
    return sorted(specs, key=lambda spec: spec.id)


def _calibrate_keys(calibration: Calibration, values: Mapping[str, Any], floors: Mapping[str, Dict[str, Any]],
                    results_dir: str, run: Any) -> Dict[str, Dict[str, Any]]:
    entries = {}
    for spec in _headline_metrics():
        by_host = {host: found.value(spec.id) for host, found in values.items() if found.value(spec.id) is not None}
        if not by_host:
            calibration.not_measured.append(spec.baseline_key)
            continue
        left_out = ["%s (%s)" % (host, "; ".join(values[host].left_out.get(spec.id) or ["not measured"]))
                    for host in sorted(values) if host not in by_host]
        result = KeyResult(spec.baseline_key, spec, by_host, left_out=left_out)
        calibration.keys.append(result)
        not_positive = sorted(host for host, value in by_host.items() if not value > 0)
        if not_positive:
            result.refused = "not a positive rate on %s" % ", ".join(not_positive)
        elif len(by_host) < MIN_HOSTS:
            result.refused = "measured on %d host(s) (%s), at least %d needed%s" % (
                len(by_host), ", ".join(sorted(by_host)), MIN_HOSTS, "; not on %s" % ", ".join(left_out) if left_out else "")
        elif spec.drift_tolerance is None:
            result.refused = "the metric catalogue states no drift tolerance to hold the hosts' spread to"
        else:
            result.spread = spread_of(by_host, spec.drift_tolerance)
            result.refused = _refusal(spec, result.spread, floors.get(spec.baseline_key))
        conditions, condition_problem = _shared_conditions({host: values[host].gpus[spec.id] for host in by_host})
        if not result.refused and condition_problem:
            result.refused = condition_problem
        if result.refused:
            calibration.refusals.append("known_good.%s (%s): %s" % (result.key, spec.id, result.refused))
            continue
        result.entry = _entry(spec, result.spread, conditions, {host: values[host] for host in by_host}, results_dir, run)
        entries[spec.baseline_key] = result.entry
    return entries


def _fail_bounds(floors: Mapping[str, Dict[str, Any]], rules: Sequence[Mapping[str, Any]]) -> Dict[str, Dict[str, Any]]:
    """Each floor with the value a median must reach: the floor times the fail threshold of the fail rule held to that
    known_good key (a healthy GPU sits near its floor, which is the lowest healthy ratio of the evidence: a median
    refused below the floor itself would refuse healthy batches; below this bound it would fail against the floor)."""
    bounds = {}
    for key, floor in floors.items():
        percents = [rule["params"]["fail_below_pct"] for rule in rules
                    if rule.get("severity") == "fail" and rule.get("enabled", True) and isinstance(rule.get("params"), Mapping)
                    and rule["params"].get("known_good") == key and isinstance(rule["params"].get("fail_below_pct"), (int, float))]
        if percents:
            bounds[key] = dict(floor, fail_below_pct=max(percents), bound=floor["value"] * max(percents) / 100.0)
    return bounds


def _refusal(spec: MetricSpec, spread: Spread, floor: Optional[Dict[str, Any]]) -> str:
    outliers = spread.outliers()
    if outliers:
        return "spread %s (%s) is above the metric's drift tolerance %s; outlying: %s" % (
            percent(spread.spread), SPREAD_MEASURE, percent(spread.tolerance), ", ".join(
                "%s %s (%+.1f %%)" % (host, format_quantity(value, spec.unit), 100.0 * deviation) for host, value, deviation in outliers))
    if floor is not None and spread.median < floor["bound"]:
        return ("the median %s would fail against the datasheet floor %s (below %g %% of it, %s; %s): a batch this slow "
                "calibrates a bad baseline; find why before calibrating" % (
                    format_quantity(spread.median, spec.unit), format_quantity(floor["value"], floor["unit"]), floor["fail_below_pct"],
                    format_quantity(floor["bound"], floor["unit"]), floor["source"]))
    return ""


def _shared_conditions(gpus_by_host: Mapping[str, Sequence[host_values.GpuValue]]):
    """({condition key: the value every GPU shares}, "") or ({}, which hosts measured under which values)."""
    keys = sorted({key for gpus in gpus_by_host.values() for gpu in gpus for key, unused in gpu.conditions})
    shared = {}
    for key in keys:
        seen = {host: sorted({value for gpu in gpus for name, value in gpu.conditions if name == key} or {None},
                             key=lambda value: -1 if value is None else value)
                for host, gpus in sorted(gpus_by_host.items())}
        every = [value for values in seen.values() for value in values]
        numbers = [value for value in every if value is not None]
        if None in every or max(numbers) > min(numbers) * (1 + CONDITION_TOLERANCE):
            return {}, "the hosts measured it under different %s: %s" % (key, ", ".join(
                "%s %s" % (host, "/".join("not recorded" if value is None else "%g" % value for value in values))
                for host, values in seen.items()))
        shared[key] = rounded(min(numbers))
    return shared, ""


def _entry(spec: MetricSpec, spread: Spread, conditions: Mapping[str, float], values: Mapping[str, Any], results_dir: str,
           run: Any) -> Dict[str, Any]:
    hosts = sorted(values)
    probe = spec.id.split(".", 1)[0]
    dates = sorted({date for found in values.values() for date in found.dates})
    drivers = sorted({driver for found in values.values() for driver in found.drivers})
    dir_names = {host.name: host.dir_name for host in run.hosts}
    entry: Dict[str, Any] = {
        "value": spread.median,
        "unit": spec.unit,
        "source": ("calibrated from run %s: median of %d hosts (%s), each host's median over its GPUs of %s (%s, the value "
                   "the judge compares: the median of a measurement's repeats); spread %s (%s; tolerance %s, the metric's "
                   "drift tolerance)" % (run.run_id, len(hosts), ", ".join(hosts), spec.title, spec.id, percent(spread.spread),
                                         SPREAD_MEASURE, percent(spread.tolerance))),
    }
    if spec.method:
        entry["method"] = spec.method
    entry.update(conditions)
    entry["measured"] = {
        "date": dates[0] if len(dates) == 1 else ("%s to %s" % (dates[0], dates[-1]) if dates else "not recorded in the results"),
        "rig": "run %s of %s: %s" % (run.run_id, os.path.abspath(results_dir), ", ".join(hosts)),
        "driver": ", ".join(drivers) or "not recorded in the results",
        "script": "probes/%s.py (gpufleet.validation %s), calibrated by playbooks/calibrate.yml" % (probe, collection_version()),
        "machines": [value for unused_host, value, unused_deviation in spread.deviations],
        "runs": ", ".join(os.path.join(run.run_id, dir_names.get(host, host), result_file_name(probe)) for host in hosts),
    }
    return entry


def _document(calibration: Calibration, start: Optional[Dict[str, Any]], gpus: Mapping[str, Any], facts: Mapping[str, Any],
              run_id: str) -> Optional[Dict[str, Any]]:
    """The document to replace known_good keys in: the starting baseline, or a new one; None with a refusal said."""
    gpus_by_host = {host: list(gpus.get(host) or []) for host in calibration.hosts}
    if start is not None:
        if facts:
            calibration.notes.append("the facts given are not used: %s states the SKU's facts" % calibration.start)
        document = dict(start)
    else:
        kind, unused_why = identity.unknown_kind(gpus_by_host[calibration.hosts[0]], [])
        match = identity.match_block(kind, gpus_by_host, run_id)
        document, problem = baseline_file.new_document(calibration.sku, kind.name, match, facts)
        if document is None:
            calibration.refusals.append(problem)
            return None
    mismatched = identity.unmatched(document, gpus_by_host)
    if mismatched:
        calibration.refusals.append("the file's match block would not make these hosts %s: %s" % (calibration.sku, "; ".join(mismatched)))
        return None
    return document


def _header(calibration: Calibration, results_dir: str, entries: Mapping[str, Any]) -> List[str]:
    today = datetime.datetime.now(datetime.timezone.utc).date().isoformat()
    return [
        "Calibrated by playbooks/calibrate.yml (gpufleet.validation %s) on %s from run %s of %s." % (
            collection_version(), today, calibration.run_id, os.path.abspath(results_dir)),
        "Started from %s; known_good %s calibrated (the median of %d healthy hosts: %s)." % (
            calibration.start, ", ".join(sorted(entries)), len(calibration.hosts), ", ".join(calibration.hosts)),
        "Judge with: ansible-playbook playbooks/report.yml -e gpufleet_run_id=<run> -e gpufleet_baselines_dir=<this folder>",
        "Validated by schemas/baseline.schema.json.",
    ]
