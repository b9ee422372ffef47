# -*- coding: utf-8 -*-
# Copyright: gpufleet.validation contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The numbers the judge compares across the fleet and with earlier runs (judge/fleet.py, judge/drift.py): Metric.

Each probe's declaration (plugin_utils/probes/<probe>.py) names its function(data) -> list of Metric(metric_id,
gpu_uuid, gpu_index, value, unit, better), better being "higher", "lower" or "none" (which direction is good); a
measurement probe derives it from its measurements (judge/measurement.py's metrics_of). A metric whose spec is keyed
by a device that is not a GPU (MetricSpec.device_kind, e.g. "rdma_port") names that device instead: Metric.of(spec,
None, None, value, device="mlx5_0/1"); the fleet comparison and drift key it by (metric id, device) as a GPU's by
(metric id, GPU uuid).
"""
from __future__ import annotations

from typing import NamedTuple, Optional

from ..metric_spec import GPU, HOST, device_label
from .check_helpers import gpu_label


class Metric(NamedTuple):
    metric_id: str
    gpu_uuid: Optional[str]
    gpu_index: Optional[int]
    value: float
    unit: str
    better: str
    device: Optional[str] = None  # the device of a metric keyed by a named device kind (a port "mlx5_0/1"), else None

    @classmethod
    def of(cls, spec, gpu_uuid, gpu_index, value, device=None):
        """The metric of spec, keyed as its device_kind says: a GPU's uuid and index (or none: the host) for "gpu", nothing
        for "host", the device's id alone for a named kind. Raises ValueError for any other key."""
        kind = spec.device_kind
        if kind == GPU:
            wrong = device is not None
        elif kind == HOST:
            wrong = gpu_uuid is not None or gpu_index is not None or device is not None
        else:
            wrong = gpu_uuid is not None or gpu_index is not None or not isinstance(device, str) or not device
        if wrong:
            raise ValueError("metric %s is keyed by %s, not by GPU %r (index %r), device %r" % (spec.id, kind, gpu_uuid, gpu_index, device))
        return cls(spec.id, gpu_uuid, gpu_index, float(value), spec.unit, spec.better, device)

    def subject(self) -> Optional[str]:
        """What one value is of, in a key beside the metric id: the device (a named kind), else the GPU's uuid (None: the
        host)."""
        return self.device if self.device is not None else self.gpu_uuid


def subject_label(gpu_uuid: Optional[str], gpu_index: Optional[int], device: Optional[str], kind: Optional[str]) -> str:
    """"port mlx5_0/1: ", "GPU 0 (GPU-...): " or "" (the host), the start of a check's reason about one metric value."""
    if device is not None:
        return "%s: " % device_label(kind, device)
    return "%s: " % gpu_label({"index": gpu_index, "uuid": gpu_uuid}) if gpu_uuid else ""


def worse(better: str, change: float) -> bool:
    """Whether a change of this sign is for the worse, for a metric where ``better`` is "higher", "lower" or "none" (every
    change is)."""
    return better == "none" or (better == "higher" and change < 0) or (better == "lower" and change > 0)
