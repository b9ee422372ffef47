"""A probe's metric catalogue is declared with the metric model (plugin_utils/metric_spec.py), which lies below the judge:
this module hands its names on to the probe packages (metrics.py: METRICS = (MetricSpec(...), ...))."""
from __future__ import annotations

from ..metric_spec import DIRECTIONS, METHODS, UNITS, MetricSpec, spec_problems

__all__ = ["DIRECTIONS", "METHODS", "UNITS", "MetricSpec", "spec_problems"]
