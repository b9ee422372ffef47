"""What the judge is told about one probe: plugin_utils/probes/<probe>/judging.py defines JUDGING = ProbeJudging(...).

Read only when a run is judged (registry.probe_catalogue), never by the probe action.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import FrozenSet, Mapping, Optional

from ..judge.baseline_checks import against_known_good
from ..judge.busy import unless_busy
from ..judge.catalogue import CheckFunction, MetricsFunction
from ..judge.machine_facts import MachineDeclaration
from ..judge.measurement import MeasurementsFunction, metrics_of
from ..judge.settings import SettingsFunction
from .declaration import DeclarationError
from .metric_catalogue import MetricSpec


@dataclass(frozen=True)
class ProbeJudging:
    # {check name: function} of the probe's own checks; after construction also its baseline checks (below).
    checks: Mapping[str, CheckFunction] = field(default_factory=dict)
    # metrics(data) -> [Metric]; left out, each GPU's value of every measurement (measurement.metrics_of).
    metrics: Optional[MetricsFunction] = None
    # measurements(data) -> [Measurement] (judge/measurement.py): the probe's data layout read once, into the measured
    # quantities its baseline checks and its metrics are built from.
    measurements: Optional[MeasurementsFunction] = None
    # {check name: the metric's catalogue entry (the probe's metrics.py)}: the measurements of that metric against the
    # SKU's known-good value (judge/baseline_checks.py against_known_good); they join checks.
    baseline_checks: Mapping[str, MetricSpec] = field(default_factory=dict)
    # settings(data) -> [Setting] (judge/settings.py): configured values, each a drift check (changed: warn) and held
    # to the value most hosts of the SKU share.
    settings: Optional[SettingsFunction] = None
    # The probe that describes the machine declares how (judge/machine_facts.py): the GPUs the SKU is identified from,
    # how many the host should have, their identities and drift, the fleet index's columns. One probe at most.
    machine: Optional[MachineDeclaration] = None
    # The names of its own checks whose findings another job on the GPU distorts (rates, ratios, clocks, throttling):
    # on a busy GPU they are "not validated: busy" skips (judge/busy.py), as its baseline checks always are.
    busy_distorts: FrozenSet[str] = frozenset()

    def __post_init__(self) -> None:
        if self.baseline_checks and self.measurements is None:
            raise DeclarationError("baseline_checks judge measurements, so the probe's JUDGING needs measurements")
        both = sorted(set(self.checks) & set(self.baseline_checks))
        if both:
            raise DeclarationError("check(s) %s declared both in checks and in baseline_checks" % ", ".join(both))
        unknown = sorted(set(self.busy_distorts) - set(self.checks))
        if unknown:
            raise DeclarationError("busy_distorts names %s, which are not the probe's checks" % ", ".join(unknown))
        own = {name: unless_busy(function) if name in self.busy_distorts else function for name, function in self.checks.items()}
        baseline = {name: unless_busy(against_known_good(metric, self.measurements)) for name, metric in self.baseline_checks.items()}
        object.__setattr__(self, "checks", dict(own, **baseline))
        if self.metrics is None and self.measurements is not None:
            object.__setattr__(self, "metrics", metrics_of(self.measurements))
