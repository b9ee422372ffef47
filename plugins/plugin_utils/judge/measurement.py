# -*- coding: utf-8 -*-
# Copyright: gpufleet.validation contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""A measurement: one measured quantity of one device, as the judge reads it.

Each measurement probe's declaration (plugin_utils/probes/<probe>.py) reads its own data layout once, into a list of
these; the generic baseline check (judge/baseline_checks.py), the fleet and drift metrics and whatever else needs the
numbers read the list, never the layout.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Dict, List, Mapping, Optional, Tuple

from ..metric_spec import MetricSpec
from ..result_fields import number_or_none
from .check_helpers import gpu_label
from .metrics import Metric


def measured(value: Any) -> Any:
    """A JSON number as the result holds it (int or float, so a check's value reads as the result's); else None."""
    return value if number_or_none(value) is not None else None


@dataclass(frozen=True)
class Device:
    """The device a quantity was measured on: kind "cuda" or "cpu" (a probe's CPU path), its index and UUID."""

    kind: Optional[str]
    index: Optional[int] = None
    uuid: Optional[str] = None

    @classmethod
    def of(cls, device: Any) -> "Device":
        """From a probe's device record ({"kind", "index", "uuid", ...}); a UUID that is not a string is None."""
        device = device if isinstance(device, Mapping) else {}
        uuid = device.get("uuid")
        return cls(device.get("kind"), device.get("index"), uuid if isinstance(uuid, str) else None)

    @property
    def gpu(self) -> Optional[Dict[str, Any]]:
        """What make_check files a check under; None for a measurement of the CPU path, which is no GPU's."""
        if self.kind != "cuda":
            return None
        return {"index": self.index, "uuid": self.uuid}

    def label(self) -> str:
        """How a check names the device: "GPU 0 (GPU-8eb0778b-)", "the host's GPUs" (no index), "the CPU"."""
        if self.kind != "cuda":
            return "the CPU"
        return gpu_label(self.gpu) if self.index is not None else "the host's GPUs"


@dataclass(frozen=True)
class Missing:
    """Why a measurement has no value to judge, in the probe's words."""

    reason: str
    # "skip": the platform does not offer it or the probe did not take it on purpose; "error": it should have been measured.
    status: str
    # The check's words after the device's label, e.g. "the pinned H2D copy was not measured: <reason>".
    sentence: str
    # Listed before the compared values of the same check (gemm's dtype and power-state findings always were).
    listed_first: bool = False


def not_measured(what: str, reason: Any, status: str = "error", listed_first: bool = False) -> Missing:
    """The usual missing value: "<what> was not measured: <reason>"."""
    return Missing("%s" % (reason,), status, "%s was not measured: %s" % (what, reason), listed_first)


@dataclass(frozen=True)
class Condition:
    """A condition a quantity was measured under that its reference must share (gemm sustained: the power limit).

    The reference is the known-good baseline entry the rule names; a measurement whose value of `key` is lower than
    the entry's own `key` by more than `tolerance` (relative) is not compared with it: the check is a skip that says
    `lower_words` % {"measured": ..., "reference": ...}.
    """

    key: str
    value: float
    name: str
    lower_words: str
    tolerance: float = 0.01

    def lower_than(self, reference: Mapping[str, Any]) -> Optional[float]:
        """The reference's value of the condition when this measurement's lies below it beyond the tolerance, else None."""
        wanted = reference.get(self.key)
        if isinstance(self.value, (int, float)) and isinstance(wanted, (int, float)) and self.value < wanted * (1 - self.tolerance):
            return wanted
        return None


@dataclass(frozen=True)
class Measurement:
    """One measured quantity of one device."""

    metric_id: str                   # e.g. "membw.bandwidth_gbps", "gemm.bf16_burst_tflops", "hostbw.pinned_h2d_gbps"
    unit: str
    better: str                      # "higher", "lower" or "none"
    device: Device
    what: str                        # what was measured, in words: "the copy bandwidth plateau (read + written)"
    # The number the result holds, as it holds it (None when it holds none); it is also the fleet and drift metric.
    value: Any = None
    # Why the value is not judged (None when it is); the result may still hold a value, which then stays a metric.
    missing: Optional[Missing] = None
    samples: Tuple[float, ...] = ()  # the repeats the decision is the median of (empty: the value as it stands)
    # Said after `what` wherever the value is compared: where and how it was taken (" on square-8192").
    detail: str = ""
    conditions: Tuple[Condition, ...] = ()

    @classmethod
    def of(cls, spec: MetricSpec, device: Device, what: str, **fields: Any) -> "Measurement":
        """A measurement of a catalogue metric: its id, unit and direction are the spec's; fields: value, missing ..."""
        return cls(spec.id, spec.unit, spec.better, device, what, **fields)


# measurements(data) -> every measured quantity of one probe result.
MeasurementsFunction = Callable[[Dict[str, Any]], List[Measurement]]


def metric_of(measurement: Measurement) -> Optional[Metric]:
    """The fleet and drift metric of a measurement: a GPU (CUDA device with a UUID) whose result holds a value."""
    device = measurement.device
    if device.kind != "cuda" or device.uuid is None or measurement.value is None:
        return None
    return Metric(measurement.metric_id, device.uuid, device.index, float(measurement.value), measurement.unit, measurement.better)


def metrics_of(measurements: MeasurementsFunction) -> Callable[[Dict[str, Any]], List[Metric]]:
    """A probe's metrics function, derived from its measurements."""
    def metrics(data: Dict[str, Any]) -> List[Metric]:
        found = (metric_of(measurement) for measurement in measurements(data))
        return [metric for metric in found if metric is not None]
    return metrics
