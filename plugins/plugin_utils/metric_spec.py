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
    return problems
