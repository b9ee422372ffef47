"""What a probe is on the controller: one declaration per probe, in plugin_utils/probes/<probe>.py.

The registry (registry.py) finds each declaration from the probe scripts in probes/, so nothing lists the probes by
hand: the profiles, the default time limits, the judge's checks and metrics and the dossier's sections are all read
from here. docs/adding-a-probe.md walks through writing one.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, Dict, List, Mapping, Optional, Tuple

from ..judge.baseline_checks import against_known_good
from ..judge.catalogue import CheckFunction, MetricsFunction
from ..judge.measurement import MeasurementsFunction, metrics_of
from ..judge.settings import SettingsFunction

# derived_params(host_dir, params) -> (params with what the same run already measured on the host, notes saying what
# was derived and from where); a parameter the user gave always wins.
DerivedParams = Callable[[str, Dict[str, Any]], Tuple[Dict[str, Any], List[str]]]
TABLES_HTML = "sections/tables.html.j2"
TABLES_MARKDOWN = "sections/tables.md.j2"


class DeclarationError(ValueError):
    """A probe script without a sound declaration: the collection is broken, and says where."""


@dataclass(frozen=True)
class ProbeSection:
    """A probe's own summary in the dossier: templates included before the generic table, and the view they read."""

    view: Callable[[Any], Dict[str, Any]]
    html_template: str = TABLES_HTML
    markdown_template: str = TABLES_MARKDOWN


@dataclass(frozen=True)
class ProbeDeclaration:
    name: str
    # Where the probe runs in a profile: lower first (bandwidth before sustained load, which needs a cool-down after).
    run_order: int
    timeout_s: int
    # {profile: parameters the profile gives the probe}; the user's probe_params win over them.
    profiles: Mapping[str, Mapping[str, Any]]
    # {check name: function} of the probe's own checks; after construction also its baseline checks (below).
    checks: Mapping[str, CheckFunction] = field(default_factory=dict)
    # metrics(data) -> [Metric]; left out, each GPU's value of every measurement (measurement.metrics_of).
    metrics: Optional[MetricsFunction] = None
    # measurements(data) -> [Measurement] (judge/measurement.py): the probe's data layout read once, into the measured
    # quantities its baseline checks and its metrics are built from.
    measurements: Optional[MeasurementsFunction] = None
    # {check name: metric id}: the measurements of that metric against the SKU's known-good value
    # (judge/baseline_checks.py against_known_good); they join checks.
    baseline_checks: Mapping[str, str] = field(default_factory=dict)
    # settings(data) -> [Setting] (judge/settings.py): configured values, each a drift check (changed: warn) and held
    # to the value most hosts of the SKU share.
    settings: Optional[SettingsFunction] = None
    section: Optional[ProbeSection] = None
    min_gpus: int = 1
    derived_params: Optional[DerivedParams] = None
    # Why no rule reads the probe ("" when rules do): its absence is then never a failed GPU.
    judges_nothing: str = ""
    # False for a probe that does not need a working GPU stack (it reads sysfs, or falls back to the CPU): its failure is
    # never folded under a broken driver or CUDA as their consequence (judge/causes.py).
    needs_gpu: bool = True
    # A probe that runs from a role and playbook of its own rather than a profile of the probe role.
    own_playbook: str = ""
    summary: str = ""

    def __post_init__(self) -> None:
        if self.baseline_checks and self.measurements is None:
            raise DeclarationError("probe %s: baseline_checks judge measurements, so the declaration needs measurements"
                                   % self.name)
        both = sorted(set(self.checks) & set(self.baseline_checks))
        if both:
            raise DeclarationError("probe %s: check(s) %s declared both in checks and in baseline_checks"
                                   % (self.name, ", ".join(both)))
        baseline = {name: against_known_good(metric_id, self.measurements) for name, metric_id in self.baseline_checks.items()}
        object.__setattr__(self, "checks", dict(self.checks, **baseline))
        if self.metrics is None and self.measurements is not None:
            object.__setattr__(self, "metrics", metrics_of(self.measurements))
