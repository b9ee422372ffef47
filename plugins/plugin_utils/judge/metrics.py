# -*- coding: utf-8 -*-
# Copyright: gpufleet.validation contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The numbers the judge compares across the fleet and with earlier runs (judge/fleet.py, judge/drift.py): Metric.

Each probe's declaration (plugin_utils/probes/<probe>.py) names its function(data) -> list of Metric(metric_id,
gpu_uuid, gpu_index, value, unit, better), better being "higher", "lower" or "none" (which direction is good); a
measurement probe derives it from its measurements (judge/measurement.py's metrics_of).
"""
from __future__ import annotations

from typing import NamedTuple, Optional


class Metric(NamedTuple):
    metric_id: str
    gpu_uuid: Optional[str]
    gpu_index: Optional[int]
    value: float
    unit: str
    better: str

    @classmethod
    def of(cls, spec, gpu_uuid, gpu_index, value):
        return cls(spec.id, gpu_uuid, gpu_index, float(value), spec.unit, spec.better)


def worse(better: str, change: float) -> bool:
    """Whether a change of this sign is for the worse, for a metric where ``better`` is "higher", "lower" or "none" (every
    change is)."""
    return better == "none" or (better == "higher" and change < 0) or (better == "lower" and change > 0)
