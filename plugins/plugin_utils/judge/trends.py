# -*- coding: utf-8 -*-
# Copyright: gpufleet.validation contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The trend checks (issue 48, docs/history.md "Trend checks"): what a host's earlier runs, read from the run index,
say of it that one run cannot. Each is a rule of rules/history.yaml (probe "history"), with params a host may override,
its source, and the runs it used named in its reason; with too few runs it skips and says how many it had.

- slow_decay: a headline metric's least-squares slope over its last window_runs runs, declining faster than
  decline_pct_per_30_days with a t statistic of at least min_t;
- returning_fault: a root cause of this run that came back `returns` times after the host was back in service;
- flapping: a measured verdict that changed more than max_changes times in the last `runs` runs;
- slowest_of_group: the lowest of its group on a headline in `runs` consecutive runs, min_gap_pct below its median.

Pure: the history comes in as judge/history_model.HostHistory."""
from __future__ import annotations

import math
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import Any, Dict, Iterable, List, Mapping, Optional, Sequence, Tuple

from ..metric_spec import MetricSpec
from ..report.number_format import format_number, format_quantity
from .check_helpers import reads_params
from .history_model import HISTORY_PROBE, HostHistory, same_machine, series_key
from .metrics import Metric, subject_label
from .model import Check
from .rules import cap_status
from .stats import median

DAYS_PER_RATE = 30.0
# The measured verdicts a host is in service with: a run of one of them between two faults is a return to service.
IN_SERVICE_VERDICTS = ("pass", "warn")


def headline_specs(specs: Mapping[str, MetricSpec]) -> Dict[str, MetricSpec]:
    """The headline metrics a trend reads: those held to a known-good value of the SKU's baseline, with a better way."""
    return {metric_id: spec for metric_id, spec in specs.items() if spec.baseline_key and spec.better in ("higher", "lower")}


def _check(rule: Mapping[str, Any], host: str, status: str, reason: str, **fields: Any) -> Check:
    params = rule.get("params") or {}
    return Check(id=rule["id"], host=host, probe=HISTORY_PROBE, status=cap_status(status, rule.get("severity") or "warn"),
                 reason=reason, reference_source=str(params.get("source") or "rules/history.yaml %s" % rule["id"]), **fields)


def day_number(started: str) -> Optional[float]:
    """Days since the epoch of an ISO 8601 time (UTC where it names no zone), None when it is none."""
    try:
        moment = datetime.fromisoformat(started.replace("Z", "+00:00"))
    except (AttributeError, TypeError, ValueError):
        return None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=timezone.utc)
    return moment.timestamp() / 86400.0


def _runs_words(run_ids: Sequence[str]) -> str:
    """"14 runs, 20261120T... to 20261204T..." of run ids oldest first."""
    if len(run_ids) == 1:
        return "1 run, %s" % run_ids[0]
    return "%d runs, %s to %s" % (len(run_ids), run_ids[0], run_ids[-1])


@dataclass(frozen=True)
class Slope:
    """A least-squares line through (day, value) points: its rate in % of the mean per 30 days and its t statistic."""

    count: int
    span_days: float
    rate_pct: float
    t_value: float
    first: float
    last: float
    slope_per_day: float


def fit_slope(points: Sequence[Tuple[float, float]]) -> Optional[Slope]:
    """The line through at least 3 points of distinct days, None otherwise (or when their mean is 0)."""
    count = len(points)
    if count < 3:
        return None
    mean_x = sum(x for x, unused in points) / count
    mean_y = sum(y for unused, y in points) / count
    sxx = sum((x - mean_x) ** 2 for x, unused in points)
    if sxx <= 0 or mean_y == 0:
        return None
    sxy = sum((x - mean_x) * (y - mean_y) for x, y in points)
    syy = sum((y - mean_y) ** 2 for unused, y in points)
    slope = sxy / sxx
    residual = max(syy - slope * sxy, 0.0)
    error = math.sqrt(residual / (count - 2) / sxx)
    t_value = abs(slope) / error if error > 0 else (math.inf if slope else 0.0)
    days = [x for x, unused in points]
    ends = (mean_y + slope * (min(days) - mean_x), mean_y + slope * (max(days) - mean_x))
    return Slope(count, max(days) - min(days), slope * DAYS_PER_RATE / abs(mean_y) * 100.0, t_value, ends[0], ends[1], slope)


@reads_params("window_runs", "min_runs", "min_span_days", "decline_pct_per_30_days", "min_t")
def slow_decay(host: str, rule: Mapping[str, Any], metrics: Sequence[Metric], specs: Mapping[str, MetricSpec], history: HostHistory,
               started: str, floors: Mapping[Tuple[str, str], Tuple[float, str]]) -> List[Check]:
    """One warn per headline series declining too fast, else one check that says what was judged (or why nothing was).
    floors: {series key: (fail floor, its words)} from this run's headline checks, for how long the floor is away."""
    params = rule["params"]
    headline = [metric for metric in metrics if metric.metric_id in specs and math.isfinite(metric.value)]
    if not headline:
        return [_check(rule, host, "skip", "no headline metric was measured in this run, so no trend was fitted")]
    if history.problem:
        return [_check(rule, host, "skip", "not fitted: %s" % history.problem)]
    now = day_number(started)
    window = max(int(params["window_runs"]), 3)
    fired, judged, short = [], [], []
    for metric in headline:
        key = series_key(metric.metric_id, metric.gpu_uuid, metric.device)
        earlier = [(day_number(when), value, run_id) for when, value, run_id in history.series.get(key, [])[:window - 1]]
        points = [(day, value, run_id) for day, value, run_id in reversed(earlier) if day is not None] + [(now, metric.value, "this run")]
        if now is None or len(points) < int(params["min_runs"]):
            short.append(len(points))
            continue
        slope = fit_slope([(day, value) for day, value, unused in points])
        if slope is None or slope.span_days < float(params["min_span_days"]):
            short.append(len(points))
            continue
        spec = specs[metric.metric_id]
        decline = -slope.rate_pct if spec.better == "higher" else slope.rate_pct
        judged.append((decline, slope, metric, points))
        if decline >= float(params["decline_pct_per_30_days"]) and slope.t_value >= float(params["min_t"]):
            fired.append(_decay_check(rule, host, spec, metric, slope, points, floors.get(key)))
    if fired:
        return fired
    if not judged:
        return [_check(rule, host, "skip", "too few runs to fit a trend: the headline series had %s run(s) with this one, over "
                       "less than %s days or fewer than %s runs (rule %s params min_runs, min_span_days)"
                       % (max(short), format_number(float(params["min_span_days"])), params["min_runs"], rule["id"]))]
    steepest = max(judged, key=lambda item: item[0])
    decline, slope, metric, points = steepest
    return [_check(rule, host, "pass", "%d headline series fitted over up to %d runs: none declines %s %% or more per 30 days "
                   "with t >= %s; the steepest, %s%s, %s over %s / 30 days (t = %s)%s"
                   % (len(judged), window, format_number(float(params["decline_pct_per_30_days"])), format_number(float(params["min_t"])),
                      subject_label(metric.gpu_uuid, metric.gpu_index, metric.device, specs[metric.metric_id].device_kind),
                      specs[metric.metric_id].title, format_quantity(-decline, "%", signed=True), _runs_words([run for unused, unused_value, run in points]),
                      _t_words(slope.t_value), "" if not short else "; %d series had too few runs" % len(short)),
                   value=round(-decline, 3), unit="%", threshold=_decay_threshold(params))]


def _t_words(t_value: float) -> str:
    return "inf" if math.isinf(t_value) else format_number(t_value, 1)


def _decay_threshold(params: Mapping[str, Any]) -> str:
    return "declines less than %s %% per 30 days (or t < %s) over the last %s runs" % (
        format_number(float(params["decline_pct_per_30_days"])), format_number(float(params["min_t"])), params["window_runs"])


def _decay_check(rule: Mapping[str, Any], host: str, spec: MetricSpec, metric: Metric, slope: Slope,
                 points: Sequence[Tuple[float, float, str]], floor: Optional[Tuple[float, str]]) -> Check:
    params = rule["params"]
    first_day, last_day = points[0][0], points[-1][0]
    words = "%s%s %s over %s / 30 days (fitted %s to %s from %s to %s, t = %s)" % (
        subject_label(metric.gpu_uuid, metric.gpu_index, metric.device, spec.device_kind), spec.title,
        format_quantity(slope.rate_pct, "%", signed=True), _runs_words([run for unused, unused_value, run in points]),
        format_quantity(slope.first, spec.unit), format_quantity(slope.last, spec.unit), _date(first_day), _date(last_day),
        _t_words(slope.t_value))
    if floor is not None and slope.slope_per_day:
        value, floor_words = floor
        days = (slope.last - value) / -slope.slope_per_day
        if days > 0:
            words += "; at this rate it reaches the fail floor %s (%s) in about %d days" % (format_quantity(value, spec.unit), floor_words, round(days))
        else:
            words += "; it is already past the fail floor %s (%s)" % (format_quantity(value, spec.unit), floor_words)
    return _check(rule, host, "fail", words, gpu_uuid=metric.gpu_uuid, gpu_index=metric.gpu_index, device=metric.device,
                  value=round(slope.rate_pct, 3), unit="%", reference=-float(params["decline_pct_per_30_days"]),
                  threshold=_decay_threshold(params))


def _date(day: float) -> str:
    return datetime.fromtimestamp(day * 86400.0, tz=timezone.utc).strftime("%Y-%m-%d")


@reads_params("returns", "lookback_runs")
def returning_fault(host: str, rule: Mapping[str, Any], faults: Sequence[Check], history: HostHistory) -> List[Check]:
    """A fail (action service: rules/history.yaml) for each root cause of this run that came back `returns` times or more
    after the host was back in service (a run with no fault measured, or a resume by the act), within the last
    lookback_runs runs; else one pass that says what was looked at."""
    params = rule["params"]
    if not faults:
        return [_check(rule, host, "pass", "no fault in this run to look for in its earlier runs")]
    if history.problem:
        return [_check(rule, host, "skip", "not looked for: %s" % history.problem)]
    runs = list(reversed(history.runs[:max(int(params["lookback_runs"]) - 1, 0)]))
    if not runs:
        return [_check(rule, host, "skip", "no earlier run of this host in the run index to look for its faults in")]
    wanted = max(int(params["returns"]), 1)
    found, counted = [], []
    for check_id in dict.fromkeys(check.id for check in faults):
        returns, occurrences = _returns(check_id, runs)
        counted.append((check_id, returns))
        if returns >= wanted:
            found.append(_check(rule, host, "fail", "%s came back %d times after the host was back in service (%s, and this run): "
                                "escalated to service required (drain, reset, reboot, then service)"
                                % (check_id, returns, ", ".join(occurrences)), value=returns, reference=wanted,
                                threshold="a root cause comes back fewer than %d times (last %s runs)" % (wanted, params["lookback_runs"])))
    if found:
        return found
    return [_check(rule, host, "pass", "looked for %s in %s: %s" % (
        ", ".join(check_id for check_id, unused in counted), _runs_words([run.run_id for run in runs]),
        "; ".join("%s came back %d time%s" % (check_id, count, "" if count == 1 else "s") for check_id, count in counted)
        + " (%d escalate)" % wanted), value=max(count for unused, count in counted), reference=wanted)]


def _returns(check_id: str, runs: Sequence[Any]) -> Tuple[int, List[str]]:
    """(times check_id came back after a return to service, counting this run where it is a fault, the earlier runs
    it was a fault in) over runs oldest first."""
    seen, back, returns, occurrences = False, False, 0, []
    for run in runs:
        if check_id in run.faults:
            if seen and back:
                returns += 1
            seen, back = True, False
            occurrences.append(run.run_id)
        elif seen and run.measured_verdict in IN_SERVICE_VERDICTS:
            back = True
        if seen and run.resumed:
            back = True
    return returns + (1 if seen and back else 0), occurrences


def _machine_words(history: HostHistory, kept: Sequence[Any], wanted: int) -> str:
    """Why fewer runs were read than the host has: its GPUs changed (another machine under its name, or a swap)."""
    if len(kept) >= min(len(history.runs), wanted - 1):
        return ""
    return " (run %s and those before it had other GPUs: another machine's, or this one's before a GPU swap)" % history.runs[len(kept)].run_id


@reads_params("runs", "max_changes")
def flapping(host: str, rule: Mapping[str, Any], measured_verdict: str, history: HostHistory, gpus: Tuple[str, ...] = ()) -> List[Check]:
    """A warn when the measured verdict changed more than max_changes times in the last `runs` runs of this machine
    (this one counted; history_model.same_machine: its GPUs the same)."""
    params = rule["params"]
    if history.problem:
        return [_check(rule, host, "skip", "not counted: %s" % history.problem)]
    wanted = max(int(params["runs"]), 2)
    machine = same_machine(history.runs, gpus)
    earlier = list(reversed(machine[:wanted - 1]))
    verdicts = [run.measured_verdict for run in earlier] + [measured_verdict]
    changes = sum(1 for before, after in zip(verdicts, verdicts[1:]) if before != after)
    limit = int(params["max_changes"])
    words = "its verdict changed %d time%s in the last %s (%s, then this run's %s)%s" % (
        changes, "" if changes == 1 else "s", _runs_words([run.run_id for run in earlier] + ["this run"]),
        ", ".join(verdicts[:-1]) or "none", measured_verdict, _machine_words(history, machine, wanted))
    threshold = "changes at most %d times in %d runs" % (limit, wanted)
    if changes > limit:
        return [_check(rule, host, "fail", words, value=changes, reference=limit, threshold=threshold)]
    if len(verdicts) < wanted:
        return [_check(rule, host, "skip", "%s: %d of the %d runs needed" % (words, len(verdicts), wanted), value=changes,
                       threshold=threshold)]
    return [_check(rule, host, "pass", words, value=changes, reference=limit, threshold=threshold)]


@dataclass(frozen=True)
class Lowest:
    """A host that is its group's lowest on a headline in this run."""

    metric_id: str
    group: str
    value: float
    group_median: float
    group_hosts: int

    @property
    def gap_pct(self) -> float:
        return abs(self.group_median - self.value) / abs(self.group_median) * 100.0 if self.group_median else 0.0


def group_lowest(samples: Iterable[Tuple[str, str, str, Metric]], specs: Mapping[str, MetricSpec]) -> Dict[str, List[Lowest]]:
    """{host: the headlines it is its group's single lowest on (the worst of its values each)} over the run's samples
    (host, probe, group, metric); a group of one host has no lowest, and a tie names nobody."""
    worst: Dict[Tuple[str, str], Dict[str, float]] = {}
    for host, unused_probe, group, metric in samples:
        spec = specs.get(metric.metric_id)
        if spec is None or not math.isfinite(metric.value):
            continue
        values = worst.setdefault((group, metric.metric_id), {})
        value = metric.value if spec.better == "higher" else -metric.value
        values[host] = min(values.get(host, value), value)
    lowest: Dict[str, List[Lowest]] = {}
    for (group, metric_id), values in sorted(worst.items()):
        if len(values) < 2:
            continue
        ranked = sorted(values.items(), key=lambda item: item[1])
        if ranked[0][1] == ranked[1][1]:
            continue
        sign = 1.0 if specs[metric_id].better == "higher" else -1.0
        host, value = ranked[0]
        lowest.setdefault(host, []).append(Lowest(metric_id, group, sign * value, sign * median(values.values()), len(values)))
    return lowest


@reads_params("runs", "min_group_hosts", "min_gap_pct")
def slowest_of_group(host: str, rule: Mapping[str, Any], lowest: Sequence[Lowest], specs: Mapping[str, MetricSpec],
                     history: HostHistory, gpus: Tuple[str, ...] = ()) -> List[Check]:
    """A warn for each headline the host was its group's lowest on in `runs` consecutive runs (this one counted), in a
    group of at least min_group_hosts hosts, min_gap_pct or more below the group's median now."""
    params = rule["params"]
    wanted, size, gap = max(int(params["runs"]), 1), int(params["min_group_hosts"]), float(params["min_gap_pct"])
    if not lowest:
        return [_check(rule, host, "pass", "not its group's lowest on any headline in this run")]
    if history.problem:
        return [_check(rule, host, "skip", "not counted: %s" % history.problem)]
    found, notes = [], []
    for entry in lowest:
        title = specs[entry.metric_id].title if entry.metric_id in specs else entry.metric_id
        if entry.group_hosts < size:
            notes.append("lowest on %s of a group of %d hosts (%d needed)" % (title, entry.group_hosts, size))
            continue
        streak = [run.run_id for run in _leading(same_machine(history.runs, gpus), lambda run, metric=entry.metric_id: metric in run.lowest)]
        streak = list(reversed(streak[:wanted - 1])) + ["this run"]
        unit = specs[entry.metric_id].unit if entry.metric_id in specs else ""
        words = "the lowest of its group %s (%d hosts) on %s in %d consecutive run%s (%s): %s, %s %% from the group's median %s" % (
            entry.group, entry.group_hosts, title, len(streak), "" if len(streak) == 1 else "s", _runs_words(streak),
            format_quantity(entry.value, unit), format_number(entry.gap_pct, 1), format_quantity(entry.group_median, unit))
        if len(streak) >= wanted and entry.gap_pct >= gap:
            found.append(_check(rule, host, "fail", words, value=len(streak), reference=wanted,
                                threshold="not its group's lowest (by %s %% or more) in %d consecutive runs" % (format_number(gap), wanted)))
        else:
            notes.append(words)
    if found:
        return found
    if all(entry.group_hosts < size for entry in lowest):
        return [_check(rule, host, "skip", "; ".join(notes))]
    return [_check(rule, host, "pass", "; ".join(notes) + " (%d consecutive runs and %s %% below the median name it)" % (wanted, format_number(gap)))]


def _leading(runs: Sequence[Any], keep: Any) -> List[Any]:
    taken = []
    for run in runs:
        if not keep(run):
            break
        taken.append(run)
    return taken


# The trend checks by the name a rule's "check" gives (rules/history.yaml): what rules_reference_problems checks a rule's
# params against, never called through this table.
TREND_CHECKS = {"slow_decay": slow_decay, "returning_fault": returning_fault, "flapping": flapping,
                "slowest_of_group": slowest_of_group}
