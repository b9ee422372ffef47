"""The metric model: MetricSpec, what a probe's metric catalogue declares of every number the judge compares, once as
data (plugin_utils/probes/<probe>/metrics.py: METRICS = (MetricSpec(...), ...)).

Titles, units, which way is better, drift and the baseline comparison all read it; tests/unit/test_metric_catalogue.py
resolves every rule's metric, every title and every baseline key against it. Pure data: imports nothing else, so that
the judge and the probes both stand on it (docs/architecture.md, the layers).
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Iterable, List, Optional

# The closed list of units a metric is measured in.
# Gb/s: network link rates and RDMA bandwidth, which NICs and perftest state in bits (fabric); never converted to GB/s.
UNITS = ("GB/s", "Gb/s", "TFLOP/s", "W", "C", "MiB", "s", "ms", "us", "%", "MHz", "count")
DIRECTIONS = ("higher", "lower", "none")
# The states a rate is measured in (schemas/baseline.schema.json, a known_good entry's method): burst and sustained.
METHODS = ("burst", "sustained")
_ID = re.compile(r"^[a-z][a-z0-9_]*\.[a-z0-9_.]+$")
# What a metric is keyed by (MetricSpec.device_kind): "gpu" (one value per GPU; a value of no GPU stands for the host),
# "host" (one value per host), or a named kind of device that is not a GPU, each value naming its device (Metric.device).
GPU, HOST = "gpu", "host"
_DEVICE_KIND = re.compile(r"^[a-z][a-z0-9_]*$")
# How the reports name a device of a named kind ("port mlx5_0/1"); a kind not listed is named by itself.
DEVICE_WORDS = {"rdma_port": "port", "drive": "drive"}


@dataclass(frozen=True)
class MetricSpec:
    id: str                                 # "<probe>.<name>_<unit>", e.g. "membw.bandwidth_gbps"
    title: str                              # a column header and check title, e.g. "Memory bandwidth"
    unit: str                               # one of UNITS
    better: str                             # one of DIRECTIONS
    # The relative change since the host's previous run that counts as drift; None: not compared between runs.
    drift_tolerance: Optional[float]
    # The baseline's known_good key the metric is held to (baselines/<sku>.yaml), or None.
    baseline_key: Optional[str] = None
    # Why drift_tolerance is what it is (a measured spread, with its source).
    drift_source: str = ""
    # The state it is measured in (one of METHODS), where it has one: the method of its known_good entry.
    method: Optional[str] = None
    # What one value is of: GPU, HOST or a named device kind (e.g. "rdma_port", "drive"); see device_kind_problem.
    device_kind: str = GPU


def device_kind_problem(kind: object) -> Optional[str]:
    """Why kind cannot key a metric (None when it can): "gpu", "host" or a lower-case name."""
    if isinstance(kind, str) and _DEVICE_KIND.match(kind):
        return None
    return "device_kind %r is not %s, %s or a lower-case name of a device kind (e.g. rdma_port)" % (kind, GPU, HOST)


def device_word(kind: Optional[str]) -> str:
    """What the reports call a device of a named kind: "port" for rdma_port; None (an undeclared metric): "device"."""
    return DEVICE_WORDS.get(kind or "", (kind or "device").replace("_", " "))


def device_label(kind: Optional[str], device: str) -> str:
    """A device of a named kind as the reports name it: "port mlx5_0/1", "drive nvme0n1"."""
    return "%s %s" % (device_word(kind), device)


def spec_problems(probe: str, specs: Iterable[MetricSpec]) -> List[str]:
    """What is wrong with one probe's catalogue ([] when it is sound)."""
    problems, seen = [], set()
    for spec in specs:
        if not isinstance(spec, MetricSpec):
            problems.append("%s: METRICS holds %r, not a MetricSpec" % (probe, spec))
            continue
        where = "%s: metric %s" % (probe, spec.id)
        if not _ID.match(spec.id) or not spec.id.startswith(probe + "."):
            problems.append("%s: the id must be <probe>.<name> in lower case, starting with %s." % (where, probe))
        if spec.id in seen:
            problems.append("%s is declared twice" % where)
        seen.add(spec.id)
        if not spec.title.strip():
            problems.append("%s has no title" % where)
        if spec.unit not in UNITS:
            problems.append("%s: unit %r is not one of %s" % (where, spec.unit, ", ".join(UNITS)))
        if spec.better not in DIRECTIONS:
            problems.append("%s: better %r is not one of %s" % (where, spec.better, ", ".join(DIRECTIONS)))
        tolerance = spec.drift_tolerance
        if tolerance is not None and (isinstance(tolerance, bool) or not isinstance(tolerance, (int, float)) or not 0 < tolerance):
            problems.append("%s: drift_tolerance must be a fraction > 0 or None, not %r" % (where, tolerance))
        if spec.method is not None and spec.method not in METHODS:
            problems.append("%s: method %r is not one of %s" % (where, spec.method, ", ".join(METHODS)))
        kind_problem = device_kind_problem(spec.device_kind)
        if kind_problem is not None:
            problems.append("%s: %s" % (where, kind_problem))
    return problems
