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
from ..number_format import format_number, format_quantity
from ..result_fields import dig
from .causes import Causes, consequences_of, fold_consequences, root_causes
from .check_helpers import gpu_label, param_source
from .identity_checks import gpu_identities, same_gpu_checks
from .machine_shape import MachineShape, machine_shape
from .metrics import Metric
from .settings import Setting, fleet_minorities, minority_checks, settings_drift, settings_not_compared
from .model import Check, FleetJudgement, HostVerdict, error_verdict, worst_verdict
from .not_compared import mark_not_compared
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
    "drift_tolerance": 0.10,       # relative change of a metric since the previous run that counts as drift
    # per metric id, overriding drift_tolerance: CUDA init took 5.2 to 6.6 s across calls on the same H200 rig
    # (docs/health.md), and idle temperature follows the room
    "drift_tolerances": {"health.cuda_init_s": 0.5, "health.temperature_c": 0.2},
}
# The reason of drift.previous_run when the host has no earlier run; the dossier says it too when nothing was compared.
NO_EARLIER_RUN = "no earlier run of this host measured anything to compare with"
# (check id, path in the health data, words)
STATUS_ORDER = {"fail": 0, "error": 1, "warn": 2}


def _data(envelope: Any) -> Optional[Dict[str, Any]]:
    if isinstance(envelope, Mapping) and envelope.get("status") in MEASURED_STATUSES and isinstance(envelope.get("data"), dict):
        return envelope["data"]
    return None


def _unmeasured_data(envelope: Any) -> Optional[Dict[str, Any]]:
    """The data of a probe that ran but found its subject absent (status unavailable): the health probe's machine
    section still says what the machine has, without a driver."""
    if isinstance(envelope, Mapping) and envelope.get("status") == "unavailable" and isinstance(envelope.get("data"), dict):
        return envelope["data"]
    return None


def _host_check(check_id: str, host: str, probe: str, status: str, reason: str, **fields: Any) -> Check:
    return Check(id=check_id, host=host, probe=probe, status=status, reason=reason, **fields)


def expected_gpus_override(rules: List[Dict[str, Any]]) -> Optional[Tuple[int, str]]:
    """(count, source) where the host's rules set the gpu_count rule's params.expected (an inventory override)."""
    for rule in rules:
        if rule["check"] == "gpu_count" and rule["enabled"] and rule["params"].get("expected") is not None:
            return rule["params"]["expected"], param_source(rule, "expected")
    return None


def envelope_checks(host: str, probe: str, envelope: Mapping[str, Any], shape: MachineShape,
                    health_data: Optional[Dict[str, Any]], catalogue: ProbeCatalogue) -> List[Check]:
    """One check for a probe whose envelope is not ok: error/timeout/unreachable -> error; unavailable -> fail/warn/skip."""
    status = envelope.get("status")
    reason = envelope.get("reason") or "no reason given"
    check_id = "%s.probe_status" % probe
    if status in FAILED_STATUSES:
        return [_host_check(check_id, host, probe, "error", "the %s probe ended with status %s: %s" % (probe, status, reason), value=status)]
    if status == "partial":
        data = envelope.get("data") if isinstance(envelope.get("data"), dict) else {}
        sections = ", ".join("%s (%s)" % (entry.get("section"), entry.get("error")) for entry in data.get("errors") or [])
        return [_host_check(check_id, host, probe, "warn", "the %s probe is partial: %s%s" % (
            probe, reason, "; sections that failed: %s" % sections if sections else ""), value=status)]
    if status == "unavailable":
        return [_unavailable_check(host, probe, reason, shape, envelope, catalogue, (health_data or {}).get("gpus"))]
    if status != "ok":
        return [_host_check(check_id, host, probe, "error", "the %s probe returned an unknown status %r: %s" % (probe, status, reason),
                            value=status)]
    if health_data is None and probe == "health":
        return [_host_check(check_id, host, probe, "error", "the health envelope has no data", value=status)]
    return []


MISSING_PART_REMEDY = "Provide what the reason names (the NVIDIA driver, nvidia-ml-py or torch for the probes' Python, a file or " \
    "parameter the probe needs), then re-run."


def _unavailable_check(host: str, probe: str, reason: str, shape: MachineShape, envelope: Mapping[str, Any],
                       catalogue: ProbeCatalogue, health_gpus: Any = None) -> Check:
    """A probe that could not run because what it measures is absent: skip where the host should not have it (too few
    GPUs, none at all), warn for a probe that judges nothing, fail where the host should have the GPUs it needs."""
    check_id = "%s.probe_status" % probe
    expected, source = shape.expected_gpus, shape.expected_source
    nodes = dig(envelope.get("data") or {}, "device_nodes", "gpu_node_count")
    needed = catalogue.min_gpus.get(probe, 1)
    fields: Dict[str, Any] = {"value": "unavailable"}
    counted = dict(fields, reference=expected, reference_source=source) if expected is not None else fields
    visible = len(health_gpus) if isinstance(health_gpus, list) else None
    if expected is not None and expected >= needed and visible is not None and visible < needed and needed > 1:
        # the missing GPUs are the health checks' finding (gpus_on_bus, gpus_on_board, gpu_count): not a second row
        return _host_check(check_id, host, probe, "skip", "the %s probe needs at least %d GPUs and only %d of the %d this host "
                           "should have (%s) %s visible: the health checks say why the others are missing; %s" % (
                               probe, needed, visible, expected, source, "is" if visible == 1 else "are", reason), **counted)
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


def _gpu_groups(health_data: Optional[Dict[str, Any]], per_gpu: List[Tuple[Optional[str], str]]) -> Dict[str, str]:
    groups: Dict[str, str] = {}
    gpus = (health_data or {}).get("gpus")
    if not isinstance(gpus, list):
        return groups
    for gpu, (sku, unused_sentence) in zip(gpus, per_gpu):
        name = gpu.get("name") if isinstance(gpu.get("name"), str) else None
        if isinstance(gpu.get("uuid"), str):
            groups[gpu["uuid"]] = sku or unknown_group(name)
    return groups


def _host_group(sku: Optional[str], groups: Dict[str, str]) -> str:
    if sku:
        return sku
    names = sorted(set(groups.values()))
    return names[0] if len(names) == 1 else "unknown"


def _uuids_by_index(gpus: List[Any]) -> Dict[Any, str]:
    return {gpu["index"]: gpu["uuid"] for gpu in gpus
            if isinstance(gpu, dict) and isinstance(gpu.get("index"), int) and isinstance(gpu.get("uuid"), str)}


def _gpu_set_drift(host: str, current: Dict[str, Any], earlier: Dict[str, Any], earlier_run: str) -> List[Check]:
    if not isinstance(current.get("gpus"), list) or not isinstance(earlier.get("gpus"), list):
        return [_host_check("drift.gpus", host, "health", "skip", "the GPU list is unavailable in this run or in run %s" % earlier_run)]
    now, before = _uuids_by_index(current["gpus"]), _uuids_by_index(earlier["gpus"])
    now_index = {uuid: index for index, uuid in now.items()}
    before_index = {uuid: index for index, uuid in before.items()}
    checks = []
    for index in sorted(set(now) | set(before)):
        old, new = before.get(index), now.get(index)
        if old == new:
            continue
        fields = {"gpu_index": index, "gpu_uuid": new or old, "value": new, "reference": old, "reference_source": "run %s" % earlier_run}
        if old and new:
            if new in before_index:
                words = "GPU %d was %s in run %s, now %s (which was GPU %d): re-enumerated" % (index, old, earlier_run, new, before_index[new])
            else:
                words = "GPU %d was %s in run %s, now %s: swapped" % (index, old, earlier_run, new)
            checks.append(_host_check("drift.gpus", host, "health", "warn", words + "; confirm the change was intended", **fields))
        elif old and old not in now_index:
            checks.append(_host_check("drift.gpus", host, "health", "fail", "GPU %d (%s) was present in run %s and is missing now"
                                      % (index, old, earlier_run), **fields))
        elif new and new not in before_index:
            checks.append(_host_check("drift.gpus", host, "health", "warn", "GPU %d (%s) is new since run %s" % (index, new, earlier_run), **fields))
    if not checks:
        checks.append(_host_check("drift.gpus", host, "health", "pass", "the same %d GPUs (by UUID and index) as in run %s"
                                  % (len(now), earlier_run), value=len(now), reference=len(before), reference_source="run %s" % earlier_run))
    return checks


def device_majors(health: Dict[str, Any]) -> Optional[Dict[str, int]]:
    """{/dev path: major} of the NVIDIA device nodes the health probe opened; None when it could not list them."""
    nodes = dig(health, "device_nodes", "nodes")
    if not isinstance(nodes, list):
        return None
    return {node["path"]: node["major"] for node in nodes
            if isinstance(node, dict) and isinstance(node.get("path"), str) and isinstance(node.get("major"), int)}


def _major_drift(host: str, current: Dict[str, Any], earlier: Dict[str, Any], earlier_run: str) -> List[Check]:
    """The incident this tool exists for: a kernel upgrade moved /dev/nvidia-uvm from major 504 to 509."""
    now, before = device_majors(current), device_majors(earlier)
    if now is None or before is None:
        return [_host_check("drift.device_majors", host, "health", "skip", "device majors not comparable with run %s: not listed in %s"
                            % (earlier_run, "this run" if now is None else "that run"))]
    changed = ["%s %d -> %d" % (path, before[path], now[path]) for path in sorted(set(now) & set(before)) if now[path] != before[path]]
    gone = sorted(set(before) - set(now))
    new = sorted(set(now) - set(before))
    words = "; ".join(part for part in (
        "major changed: %s" % ", ".join(changed) if changed else "",
        "gone: %s" % ", ".join(gone) if gone else "", "new: %s" % ", ".join(new) if new else "") if part)
    fields = {"value": ", ".join("%s %d" % item for item in sorted(now.items())) or "none",
              "reference": ", ".join("%s %d" % item for item in sorted(before.items())) or "none",
              "reference_source": "run %s" % earlier_run, "threshold": "unchanged"}
    if changed or gone or new:
        return [_host_check("drift.device_majors", host, "health", "warn", "device nodes changed since run %s: %s; a container or "
                            "cgroup rule written for the old numbers no longer matches (health.device_majors and "
                            "health.cgroup_devices say whether this host still works)" % (earlier_run, words), **fields)]
    return [_host_check("drift.device_majors", host, "health", "pass", "the same %d device nodes and majors as in run %s"
                        % (len(now), earlier_run), **fields)]


def _worse(better: str, change: float) -> bool:
    return better == "none" or (better == "higher" and change < 0) or (better == "lower" and change > 0)


def _metric_drift(host: str, probe: str, samples: List[Metric], earlier_samples: List[Metric], earlier_run: str,
                  settings: Dict[str, Any]) -> List[Check]:
    before = {(sample.metric_id, sample.gpu_uuid): sample for sample in earlier_samples}
    checks = []
    for sample in samples:
        old = before.get((sample.metric_id, sample.gpu_uuid))
        if old is None:
            continue
        tolerance = settings["drift_tolerances"].get(sample.metric_id, settings["drift_tolerance"])
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


def _why_no_gpu(envelopes: Mapping[str, Any]) -> str:
    """The first two probes' reasons for not being ok: health's first (it is the one that looks for the GPUs)."""
    reasons = []
    for probe in sorted(envelopes, key=lambda name: (name != "health", name)):
        envelope = envelopes.get(probe)
        if isinstance(envelope, Mapping) and envelope.get("status") != "ok" and envelope.get("reason"):
            reasons.append("%s: %s" % (probe, envelope["reason"]))
    return "; ".join(reasons[:2]) if reasons else "no probe measured a GPU (every GPU check was skipped)"


NO_GPU_REMEDY = ("Nothing to repair on this host: point the collection at GPU hosts. If it should have a GPU, seat it (bare "
                 "metal) or pass it through to this virtual machine.")


def gpu_measured_check(host: str, checks: List[Check], envelopes: Mapping[str, Any], expected: Optional[int],
                       expected_source: str) -> Optional[Check]:
    """None when some check judged a GPU, or when a failing or undecided check already keeps the host out; else why no
    GPU was measured: fail where the host should have GPUs, warn otherwise (a host without a GPU is not a validated GPU
    host, and acceptance refuses it)."""
    if not envelopes or any(check.status in ("fail", "error") for check in checks):
        return None
    if any(check.gpu_uuid and check.status in ("pass", "warn") for check in checks):
        return None
    why = _why_no_gpu(envelopes)
    if expected:
        return _host_check("host.gpu_measured", host, "", "fail", "no GPU was measured although this host should have %d (%s): %s"
                           % (expected, expected_source, why), value=0, unit="GPUs", reference=expected,
                           reference_source=expected_source, threshold=">= 1 GPU measured")
    if expected == 0:
        check = _host_check("host.gpu_measured", host, "", "warn", "%s, so nothing here was validated as a GPU host" % expected_source,
                            value=0, unit="GPUs", reference=0, reference_source=expected_source, threshold=">= 1 GPU measured")
        check.remedy = NO_GPU_REMEDY
        return check
    return _host_check("host.gpu_measured", host, "", "warn", "no GPU was measured on this host and nothing says it should have one, "
                       "so it was not validated as a GPU host: %s" % why, value=0, unit="GPUs", threshold=">= 1 GPU measured")


def reason_line(check: Check, checks: List[Check]) -> str:
    """A root cause's line in the verdict's reasons, naming the checks that follow from it."""
    following = sorted(set(found.id for found in consequences_of(check, checks)))
    return "%s: %s%s" % (check.id, check.reason, " (+%d check%s that follow from it: %s)" % (
        len(following), "" if len(following) == 1 else "s", ", ".join(following)) if following else "")


def _verdict(host: str, checks: List[Check], sku: Optional[str], sku_reason: str, groups: List[str],
             causes: Optional[Causes] = None, independent: Iterable[str] = ()) -> HostVerdict:
    statuses = [check.status for check in checks]
    verdict = worst_verdict(statuses)
    if causes is not None:
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
    return HostVerdict(host=host, verdict=verdict, reasons=reasons, checks=checks, sku=sku, sku_reason=sku_reason, groups=list(groups))


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


def _judge_host(name: str, entry: Mapping[str, Any], baselines: List[Dict[str, Any]], by_id: Mapping[str, Dict[str, Any]],
                rules: Any, earlier: Optional[Tuple[Mapping[str, Any], Mapping[str, str]]], previous_run_id: Optional[str],
                options: Dict[str, Any], catalogue: ProbeCatalogue, tally: _RuleTally) -> _HostJudgement:
    envelopes = entry.get("envelopes") or {}
    health = envelopes.get("health")
    health_data = _data(health)
    if health_data is not None:
        sku, sku_reason, per_gpu = identify_host(health_data.get("gpus", {"unavailable": "no gpus field"}), baselines)
    else:
        sku, per_gpu = None, []
        sku_reason = ("no health result to identify the SKU from" if health is None else
                      "the health probe gave no data (%s: %s)" % (health.get("status"), health.get("reason")))
    baseline = by_id.get(sku) if sku else None
    host_rules, problems = effective_rules(rules, entry.get("rule_overrides"))
    shape = machine_shape(health_data if health_data is not None else _unmeasured_data(health), baseline,
                          expected_gpus_override(host_rules))
    expected_gpus, expected_gpus_source = shape.expected_gpus, shape.expected_source
    host_data = {probe: data for probe, data in ((probe, _data(envelope)) for probe, envelope in envelopes.items()) if data is not None}
    context = RuleContext(host=name, sku=sku, sku_reason=sku_reason, baseline=baseline, expected_gpus=expected_gpus,
                          expected_gpus_source=expected_gpus_source, host_data=host_data, machine=shape)
    checks = [_host_check("rules.overrides", name, "", "error", problem) for problem in problems]
    if not envelopes:
        checks.append(_host_check("host.results", name, "", "error", entry.get("reason")
                                  or "the host was reached but no probe result came back"))
    for probe in sorted(envelopes):
        checks.extend(envelope_checks(name, probe, envelopes[probe], shape, health_data, catalogue))
    checks.extend(_run_rules(name, envelopes, host_rules, context, catalogue, tally))
    gpu_groups = _gpu_groups(health_data, per_gpu)
    host_group = _host_group(sku, gpu_groups)
    current_samples: Dict[str, List[Metric]] = {}
    samples: List[Tuple[str, str, str, Metric]] = []
    for probe in sorted(envelopes):
        current_samples[probe] = catalogue.probe_metrics(probe, _data(envelopes[probe]))
        for metric in current_samples[probe]:
            group = gpu_groups.get(metric.gpu_uuid, host_group) if metric.gpu_uuid else host_group
            samples.append((name, probe, group, metric))
    if earlier is not None:
        checks.extend(_drift(name, envelopes, earlier[0], previous_run_id, current_samples, options, catalogue, earlier[1]))
    settings = [setting for probe in sorted(envelopes) for setting in catalogue.probe_settings(probe, _data(envelopes[probe]))]
    outcomes = {probe: {"status": envelope.get("status"), "reason": envelope.get("reason")} if isinstance(envelope, Mapping)
                else envelope for probe, envelope in envelopes.items()}
    identities = gpu_identities(health_data, (metric.gpu_uuid for unused_host, unused_probe, unused_group, metric in samples))
    return _HostJudgement(checks, sku, sku_reason, expected_gpus, expected_gpus_source, samples, host_group, settings,
                          outcomes, identities)


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
                baseline_problems: Sequence[str] = ()) -> FleetJudgement:
    """Judge every host of one run.

    hosts: {name: {"envelopes": {probe: envelope}, "reached": bool, "reason": str, "groups": [...], "rule_overrides": {...}}}.
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
                                     host_tally)
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
    identities = {name: judged[name].gpu_identities for name in reached}
    for name, found in same_gpu_checks(identities, {name: hosts[name].get("groups") or [] for name in reached}).items():
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
            unmeasured = gpu_measured_check(name, checks, host.outcomes, host.expected_gpus, host.expected_gpus_source)
            if unmeasured is not None:
                checks = [unmeasured] + checks
            verdicts[name] = _verdict(name, checks, host.sku, host.sku_reason, groups, causes, independent)
        except Exception as exc:  # pylint: disable=broad-exception-caught
            verdicts[name] = judging_error(name, exc, groups)
    return FleetJudgement(run_id=run_id, hosts=verdicts, unmatched_rules=unmatched, fleet_statistics=statistics,
                          previous_run_id=previous_run_id, setting_minorities=[minority.to_dict() for minority in minorities])


def _unreadable_drift(host: str, probe: str, problem: str, current: Optional[Dict[str, Any]], samples: List[Metric]) -> List[Check]:
    """The drift checks that needed an earlier result that cannot be read: each a skip that says why."""
    reason = "not compared: %s" % problem
    checks = []
    if probe == "health" and current is not None:
        checks.extend(_host_check(check_id, host, probe, "skip", reason) for check_id in ("drift.gpus", "drift.device_majors"))
    checks.extend(_host_check("drift.%s" % sample.metric_id, host, probe, "skip", reason, gpu_uuid=sample.gpu_uuid,
                              gpu_index=sample.gpu_index, value=sample.value, unit=sample.unit) for sample in samples)
    return checks


def _drift(host: str, envelopes: Mapping[str, Any], earlier_envelopes: Mapping[str, Any], previous_run_id: Optional[str],
           current_samples: Dict[str, List[Metric]], options: Dict[str, Any], catalogue: ProbeCatalogue,
           earlier_problems: Optional[Mapping[str, str]] = None) -> List[Check]:
    earlier_problems = earlier_problems or {}
    if not earlier_envelopes and not earlier_problems:
        return [_host_check("drift.previous_run", host, "", "skip", NO_EARLIER_RUN)]
    checks: List[Check] = []
    current = _data(envelopes.get("health"))
    settings = {probe: catalogue.probe_settings(probe, _data(envelopes.get(probe))) for probe in sorted(envelopes)}
    for probe, problem in sorted(earlier_problems.items()):
        checks.extend(_unreadable_drift(host, probe, problem, current, current_samples.get(probe) or []))
        checks.extend(settings_not_compared(host, probe, settings.get(probe) or [], "not compared: %s" % problem))
    try:
        earlier = _data(earlier_envelopes.get("health"))  # read back from the store here: it may no longer be there
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
        if current is not None and earlier is None and "health" not in earlier_problems:
            uncompared.add("health")
        if current is not None and earlier is not None and "health" not in earlier_problems:
            earlier_run = earlier_envelopes["health"].get("run_id") or previous_run_id or "the previous run"
            checks.extend(_gpu_set_drift(host, current, earlier, earlier_run))
            checks.extend(setting_checks.pop("health", []))
            checks.extend(_major_drift(host, current, earlier, earlier_run))
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
            moved = _metric_drift(host, probe, samples, catalogue.probe_metrics(probe, earlier_data), earlier_run, options)
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
