# -*- coding: utf-8 -*-
# Copyright: gpufleet.validation contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""What the judge is told about the probes: it knows none by name.

The controller builds one from the probes' declarations (plugin_utils/probe_kit/registry.py) and hands it to
judge_fleet; a test may hand it another.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, Dict, FrozenSet, Iterable, List, Mapping, Optional

from ..metric_spec import MetricSpec
from .busy import without_busy
from .machine_facts import Machine
from .metrics import Metric
from .model import Check
from .settings import Setting, SettingsFunction

# check(host, data, rule, context) -> checks; a rule's "check" names one in its probe's mapping.
CheckFunction = Callable[..., List[Check]]
# metrics(data) -> the numbers of one probe result that are compared across the fleet and with earlier runs.
MetricsFunction = Callable[[Dict[str, Any]], List[Metric]]


@dataclass(frozen=True)
class ProbeCatalogue:
    checks: Mapping[str, Mapping[str, CheckFunction]] = field(default_factory=dict)
    metrics: Mapping[str, MetricsFunction] = field(default_factory=dict)
    # Probes that measure between GPUs: on a host that should have fewer GPUs, "unavailable" is what is expected.
    min_gpus: Mapping[str, int] = field(default_factory=dict)
    # Probes that describe and judge nothing (no rule reads them): their absence is worth a look, never a failed GPU.
    judges_nothing: FrozenSet[str] = frozenset()
    # Probes that need no working GPU stack: a broken driver or CUDA does not explain their failure.
    gpu_free: FrozenSet[str] = frozenset()
    # settings(data) -> the configured values compared with the previous run and with the SKU's other hosts.
    settings: Mapping[str, SettingsFunction] = field(default_factory=dict)
    # {metric id: its spec}: every probe's metric catalogue (plugin_utils/probes/<probe>/metrics.py).
    metric_specs: Mapping[str, MetricSpec] = field(default_factory=dict)
    # The probe that describes the machine (its GPUs, how many the host should have) and its declaration; None: none does.
    machine: Optional[Machine] = None

    @property
    def machine_probe(self) -> str:
        """The name of the probe that describes the machine ("" when none does)."""
        return self.machine.probe if self.machine is not None else ""

    def describes_machine(self, probe: str) -> bool:
        return self.machine is not None and probe == self.machine.probe

    def machine_first(self, probes: Iterable[str]) -> List[str]:
        """The probes in name order, the one that describes the machine first (the dossier's order, the reasons')."""
        return sorted(probes, key=lambda name: (not self.describes_machine(name), name))

    def metric_spec(self, metric_id: str) -> Optional[MetricSpec]:
        return self.metric_specs.get(metric_id)

    def probe_metrics(self, probe: str, data: Any) -> List[Metric]:
        """The metrics of one probe's data ([] for a probe without metrics or without data), less those of a GPU another
        job computed on while the probe measured (judge/busy.py)."""
        function = self.metrics.get(probe)
        if function is None or not isinstance(data, dict):
            return []
        return without_busy(function(data), data)

    def probe_settings(self, probe: str, data: Any) -> List[Setting]:
        """The settings of one probe's data ([] for a probe without settings or without data)."""
        function = self.settings.get(probe)
        if function is None or not isinstance(data, dict):
            return []
        return function(data)
