# -*- coding: utf-8 -*-
# Copyright: gpufleet.validation contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Drift: each host's measurements, settings and machine facts against its own earlier run (drift.* checks)."""
from __future__ import annotations

from typing import Any, Dict, List, Mapping, Optional

from ..metric_spec import device_label, device_word
from ..report.number_format import format_number, format_quantity
from .catalogue import ProbeCatalogue
from .envelopes import measured_data
from .machine_facts import MachineFacts
from .metrics import Metric, subject_label, worse
from .model import Check, host_check
from .settings import settings_drift, settings_not_compared
from .stats import relative_change

# The reason of drift.previous_run when the host has no earlier run; the dossier says it too when nothing was compared.
NO_EARLIER_RUN = "no earlier run of this host measured anything to compare with"


def _drift_tolerance(metric_id: str, catalogue: ProbeCatalogue, settings: Mapping[str, Any]) -> Optional[float]:
    """The metric's drift tolerance from its catalogue entry (None: not compared between runs), else the default."""
    spec = catalogue.metric_spec(metric_id)
    return settings["drift_tolerance"] if spec is None else spec.drift_tolerance


def _kind(metric_id: str, catalogue: ProbeCatalogue) -> Optional[str]:
    spec = catalogue.metric_spec(metric_id)
    return spec.device_kind if spec is not None else None


def _devices_new_or_gone(host: str, probe: str, samples: List[Metric], before: Mapping[Any, Metric], earlier_run: str,
                         settings: Dict[str, Any], catalogue: ProbeCatalogue) -> List[Check]:
    """A device (not a GPU) measured in only one of the two runs, for a metric compared between runs: a skip where it is
    new (nothing to compare with), a warn where it is gone (it was measured and is not now)."""
    new = [sample for sample in samples if sample.device is not None]
    gone = [old for old in before.values() if old.device is not None]
    if not new and not gone:
        return []
    now = {(sample.metric_id, sample.device) for sample in new}
    checks = []
    for sample in new:
        if (sample.metric_id, sample.device) in before or _drift_tolerance(sample.metric_id, catalogue, settings) is None:
            continue
        kind = _kind(sample.metric_id, catalogue)
        checks.append(host_check("drift.%s" % sample.metric_id, host, probe, "skip", "%s: %s %s; not compared: run %s did not measure this %s"
                                 % (device_label(kind, sample.device), sample.metric_id, format_quantity(sample.value, sample.unit),
                                    earlier_run, device_word(kind)), device=sample.device, value=sample.value, unit=sample.unit))
    for old in sorted(gone, key=lambda metric: (metric.metric_id, metric.device)):
        if (old.metric_id, old.device) in now or _drift_tolerance(old.metric_id, catalogue, settings) is None:
            continue
        kind = _kind(old.metric_id, catalogue)
        words = "%s: %s was %s in run %s and is not measured in this run: the %s is gone or was not measured" % (
            device_label(kind, old.device), old.metric_id, format_quantity(old.value, old.unit), earlier_run, device_word(kind))
        checks.append(host_check("drift.%s" % old.metric_id, host, probe, "warn", words, device=old.device, unit=old.unit,
                                 reference=old.value, reference_source="run %s" % earlier_run))
    return checks


def _metric_drift(host: str, probe: str, samples: List[Metric], earlier_samples: List[Metric], earlier_run: str,
                  settings: Dict[str, Any], catalogue: ProbeCatalogue) -> List[Check]:
    """Each metric value against the same metric of the same GPU (or device) in the earlier run."""
    before = {(sample.metric_id, sample.subject()): sample for sample in earlier_samples}
    checks = []
    for sample in samples:
        old = before.get((sample.metric_id, sample.subject()))
        tolerance = _drift_tolerance(sample.metric_id, catalogue, settings)
        if old is None or tolerance is None:
            continue
        change = relative_change(old.value, sample.value)
        label = subject_label(sample.gpu_uuid, sample.gpu_index, sample.device, _kind(sample.metric_id, catalogue))
        fields = {"gpu_uuid": sample.gpu_uuid, "gpu_index": sample.gpu_index, "device": sample.device, "value": sample.value, "unit": sample.unit,
                  "reference": old.value, "reference_source": "run %s" % earlier_run, "threshold": "change <= %g %%" % (tolerance * 100)}
        check_id = "drift.%s" % sample.metric_id
        if change is None:
            drifted = sample.value != old.value and worse(sample.better, sample.value - old.value)
            words = "%s%s %s -> %s since run %s" % (label, sample.metric_id, format_number(old.value),
                                                    format_quantity(sample.value, sample.unit), earlier_run)
        else:
            drifted = abs(change) > tolerance and worse(sample.better, change)
            words = "%s%s %s -> %s (%s) since run %s" % (
                label, sample.metric_id, format_number(old.value), format_quantity(sample.value, sample.unit),
                format_quantity(change * 100, "%", signed=True), earlier_run)
        checks.append(host_check(check_id, host, probe, "warn" if drifted else "pass",
                                 words + ("; beyond the %g %% noise allowance" % (tolerance * 100) if drifted else ""), **fields))
    return checks + _devices_new_or_gone(host, probe, samples, before, earlier_run, settings, catalogue)


def _unreadable_drift(host: str, probe: str, problem: str, current: Optional[MachineFacts], samples: List[Metric],
                      catalogue: ProbeCatalogue) -> List[Check]:
    """The drift checks that needed an earlier result that cannot be read: each a skip that says why."""
    reason = "not compared: %s" % problem
    checks = []
    if catalogue.machine is not None and catalogue.describes_machine(probe) and current is not None:
        checks.extend(host_check(check_id, host, probe, "skip", reason) for check_id in catalogue.machine.declaration.drift_check_ids)
    checks.extend(host_check("drift.%s" % sample.metric_id, host, probe, "skip", reason, gpu_uuid=sample.gpu_uuid,
                             gpu_index=sample.gpu_index, device=sample.device, value=sample.value, unit=sample.unit) for sample in samples)
    return checks


def drift_checks(host: str, envelopes: Mapping[str, Any], earlier_envelopes: Mapping[str, Any], previous_run_id: Optional[str],
                 current_samples: Dict[str, List[Metric]], options: Dict[str, Any], catalogue: ProbeCatalogue,
                 earlier_problems: Optional[Mapping[str, str]] = None, current: Optional[MachineFacts] = None) -> List[Check]:
    """current: the machine's facts of this run (None when its probe gave no data)."""
    earlier_problems = earlier_problems or {}
    if not earlier_envelopes and not earlier_problems:
        return [host_check("drift.previous_run", host, "", "skip", NO_EARLIER_RUN)]
    checks: List[Check] = []
    machine, machine_probe = catalogue.machine, catalogue.machine_probe
    settings = {probe: catalogue.probe_settings(probe, measured_data(envelopes.get(probe))) for probe in sorted(envelopes)}
    for probe, problem in sorted(earlier_problems.items()):
        checks.extend(_unreadable_drift(host, probe, problem, current, current_samples.get(probe) or [], catalogue))
        checks.extend(settings_not_compared(host, probe, settings.get(probe) or [], "not compared: %s" % problem))
    try:
        # read back from the store here: it may no longer be there
        earlier = measured_data(earlier_envelopes.get(machine_probe)) if machine is not None else None
        setting_checks: Dict[str, List[Check]] = {}
        setting_runs: Dict[str, str] = {}  # each probe's earlier run: a host's probes may come from different runs
        uncompared = set()  # probes measured now that no earlier run of the host measured (store/previous.py looked)
        for probe in sorted(settings):
            earlier_data = measured_data(earlier_envelopes.get(probe))
            if earlier_data is None and settings[probe] and probe not in earlier_problems:
                uncompared.add(probe)
            if earlier_data is not None and settings[probe] and probe not in earlier_problems:
                earlier_run = setting_runs[probe] = earlier_envelopes[probe].get("run_id") or previous_run_id or "the previous run"
                setting_checks[probe] = settings_drift(host, probe, settings[probe], catalogue.probe_settings(probe, earlier_data),
                                                       earlier_run)
        if current is not None and earlier is None and machine_probe not in earlier_problems:
            uncompared.add(machine_probe)
        if machine is not None and current is not None and earlier is not None and machine_probe not in earlier_problems:
            earlier_run = earlier_envelopes[machine_probe].get("run_id") or previous_run_id or "the previous run"
            checks.extend(machine.declaration.drift(host, machine_probe, current, machine.declaration.facts(earlier), earlier_run,
                                                    setting_checks.pop(machine_probe, [])))
        for probe in sorted(setting_checks):
            checks.extend(setting_checks[probe])
        changed: Dict[str, List[str]] = {}  # by the earlier run the settings were compared with
        for probe, probe_checks in setting_checks.items():
            changed.setdefault(setting_runs[probe], []).extend(check.id[len("drift."):] for check in probe_checks if check.status == "warn")
        for probe, samples in sorted(current_samples.items()):
            earlier_data = measured_data(earlier_envelopes.get(probe))
            if earlier_data is None and samples and probe not in earlier_problems:
                uncompared.add(probe)
            if earlier_data is None or not samples or probe in earlier_problems:
                continue
            earlier_run = earlier_envelopes[probe].get("run_id") or previous_run_id or "the previous run"
            moved = _metric_drift(host, probe, samples, catalogue.probe_metrics(probe, earlier_data), earlier_run, options,
                                  catalogue)
            for check in moved if changed.get(earlier_run) else []:
                # a measured rate beside the settings that changed under it: did the change move it?
                check.reason += "; settings changed since that run: %s" % ", ".join(changed[earlier_run])
            checks.extend(moved)
        if uncompared:
            checks.append(host_check("drift.previous_run", host, "", "skip", "no earlier run of this host measured %s: not compared"
                                     % ", ".join(sorted(uncompared))))
    except Exception as exc:  # pylint: disable=broad-exception-caught
        # An earlier result the schema let through but the comparison cannot read, or one replaced since it was found:
        # drift is not judged, the host is.
        checks.append(host_check("drift.previous_run", host, "", "skip", "drift not compared with %s: comparing raised %s: %s"
                                 % (previous_run_id or "the previous run", type(exc).__name__, exc)))
    return checks
