# -*- coding: utf-8 -*-
# Copyright: gpufleet.validation contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Where the trend checks (judge/trends.py) run in a host's judgement: slow decay with the host's own checks (it needs
only its values and its history), the others once its verdict is known (a returning fault reads its root causes,
flapping its verdict, the slowest of its group the whole run's values). A rule turned off gives a skip that says so."""
from __future__ import annotations

import math
from typing import Any, Dict, List, Mapping, Optional, Sequence, Tuple

from ..metric_spec import MetricSpec
from ..report.number_format import format_number, format_quantity
from .history_model import FAULT_STATUSES, HISTORY_PROBE, HostHistory, series_key
from .metrics import Metric
from .model import Check, HostVerdict, host_check
from .trends import Lowest, flapping, returning_fault, slow_decay, slowest_of_group


def trend_rules(host_rules: Sequence[Mapping[str, Any]]) -> Dict[str, Mapping[str, Any]]:
    """{check name: rule} of a host's effective rules of the trend checks (probe "history")."""
    return {rule["check"]: rule for rule in host_rules if rule.get("probe") == HISTORY_PROBE}


def _disabled(host: str, rule: Mapping[str, Any]) -> Check:
    why = "by this host's rule overrides" if "enabled" in (rule.get("overridden") or []) else "in the rules"
    return host_check(rule["id"], host, HISTORY_PROBE, "skip", "rule disabled %s" % why)


def fail_floors(checks: Sequence[Check], host_rules: Sequence[Mapping[str, Any]], specs: Mapping[str, MetricSpec]
                ) -> Dict[Tuple[str, str], Tuple[float, str]]:
    """{series key: (the value below which the headline's rule fails, in words)} from this run's headline checks: a
    rule whose known_good param is the metric's baseline key, with fail_below_pct, and a check with a numeric reference."""
    by_rule = {}
    for spec in specs.values():
        for rule in host_rules:
            params = rule.get("params") or {}
            if rule.get("enabled") and params.get("known_good") == spec.baseline_key and isinstance(params.get("fail_below_pct"), (int, float)):
                by_rule[rule["id"]] = (spec, float(params["fail_below_pct"]))
    floors = {}
    for check in checks:
        found = by_rule.get(check.id)
        reference = check.reference
        if found is None or isinstance(reference, bool) or not isinstance(reference, (int, float)) or not math.isfinite(reference):
            continue
        spec, percent = found
        floors[series_key(spec.id, check.gpu_uuid, check.device)] = (
            reference * percent / 100.0, "%s %% of the known-good %s, rule %s" % (format_number(percent), format_quantity(reference, spec.unit), check.id))
    return floors


def decay_checks(host: str, rules: Mapping[str, Mapping[str, Any]], metrics: Sequence[Metric], specs: Mapping[str, MetricSpec],
                 history: HostHistory, started: str, floors: Mapping[Tuple[str, str], Tuple[float, str]]) -> List[Check]:
    rule = rules.get("slow_decay")
    if rule is None:
        return []
    if not rule.get("enabled", True):
        return [_disabled(host, rule)]
    return slow_decay(host, rule, metrics, specs, history, started, floors)


def verdict_trend_checks(host: str, rules: Mapping[str, Mapping[str, Any]], verdict: HostVerdict, history: HostHistory,
                         lowest: Sequence[Lowest], specs: Mapping[str, MetricSpec], metrics: Sequence[Metric]) -> List[Check]:
    """The trend checks that read the host's verdict before them: returning fault, flapping, slowest of its group.
    metrics: the host's values, whose GPUs with its checks' are the machine the runs of flapping and the slowest must
    have been of (the index's gpus rows of a run are the same: the GPUs its checks and metrics name)."""
    faults = [check for check in verdict.checks if check.status in FAULT_STATUSES and not check.because
              and check.probe != HISTORY_PROBE]
    gpus = tuple(sorted({check.gpu_uuid for check in verdict.checks if check.gpu_uuid}
                        | {metric.gpu_uuid for metric in metrics if metric.gpu_uuid}))
    calls = (("returning_fault", lambda rule: returning_fault(host, rule, faults, history)),
             ("flapping", lambda rule: flapping(host, rule, verdict.verdict, history, gpus)),
             ("slowest_of_group", lambda rule: slowest_of_group(host, rule, lowest, specs, history, gpus)))
    found: List[Check] = []
    for name, call in calls:
        rule: Optional[Mapping[str, Any]] = rules.get(name)
        if rule is None:
            continue
        found.extend(call(rule) if rule.get("enabled", True) else [_disabled(host, rule)])
    return found
