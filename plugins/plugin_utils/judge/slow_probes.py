# -*- coding: utf-8 -*-
# Copyright: gpufleet.validation contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Hosts whose probes took much longer than the same probe on their peers (issue 45): a host that sleeps 40 s before
each probe made the run wait (100 s against 29 s) and nothing named it.

Each probe's duration (the envelope's duration_s) is compared across the hosts of one group (the SKU group the fleet
comparison uses), like any fleet metric, but with a floor of its own: a probe's duration wobbles by whole seconds from
host to host (a cold import, a busy controller), so a host is slow only when it took at least SLOW_ABSOLUTE_S and
SLOW_RELATIVE longer than the group's median, and lies more than ROBUST_Z robust deviations above it where the group's
durations spread at all. Slow is a warning (fleet.probe_duration), never a failure: it says where the run's time went.
Pure Python.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Dict, List, Mapping, Tuple

from .model import Check
from .stats import mad, median, outlier_decision

CHECK_ID = "fleet.probe_duration"
SLOW_ABSOLUTE_S = 10.0
SLOW_RELATIVE = 0.5
ROBUST_Z = 3.5


@dataclass
class SlowProbe:
    """One probe of one group, and its hosts that took much longer than the group's median."""

    group: str
    probe: str
    median_s: float
    compared_hosts: int
    hosts: List[Dict[str, Any]] = field(default_factory=list)  # [{"host", "duration_s", "over_s"}], slowest first

    def to_dict(self) -> Dict[str, Any]:
        return {"group": self.group, "probe": self.probe, "median_s": round(self.median_s, 2),
                "compared_hosts": self.compared_hosts, "hosts": list(self.hosts)}


def durations(envelopes: Mapping[str, Any]) -> Dict[str, float]:
    """{probe: seconds} of the envelopes that say how long they took."""
    found = {}
    for probe, envelope in envelopes.items():
        seconds = envelope.get("duration_s") if isinstance(envelope, Mapping) else None
        if isinstance(seconds, (int, float)) and not isinstance(seconds, bool) and seconds >= 0:
            found[probe] = float(seconds)
    return found


def _slow(seconds: float, count: int, center: float, spread: float) -> bool:
    """Longer than the median by SLOW_ABSOLUTE_S, and an outlier of the fleet comparison's kind (stats.outlier_decision)
    whose noise floor and relative tolerance are SLOW_RELATIVE."""
    if seconds - center < SLOW_ABSOLUTE_S:
        return False
    return bool(outlier_decision(seconds, count, center, spread, ROBUST_Z, SLOW_RELATIVE, 1, SLOW_RELATIVE).outlier)


def slow_probes(hosts: Mapping[str, Tuple[str, Mapping[str, float]]], min_peers: int
                ) -> Tuple[List[SlowProbe], Dict[str, List[Check]]]:
    """hosts: {host: (group, {probe: seconds})}. The slow probes by group, and each slow host's checks."""
    populations: Dict[Tuple[str, str], Dict[str, float]] = {}
    for host, (group, taken) in hosts.items():
        for probe, seconds in taken.items():
            populations.setdefault((group, probe), {})[host] = seconds
    found, checks = [], {}
    for (group, probe), by_host in sorted(populations.items()):
        if len(by_host) < min_peers:
            continue
        values = list(by_host.values())
        center, spread = median(values), mad(values)
        slow = sorted(((host, seconds) for host, seconds in by_host.items() if _slow(seconds, len(values), center, spread)),
                      key=lambda pair: (-pair[1], pair[0]))
        if not slow:
            continue
        entry = SlowProbe(group, probe, center, len(by_host))
        for host, seconds in slow:
            entry.hosts.append({"host": host, "duration_s": round(seconds, 2), "over_s": round(seconds - center, 2)})
            checks.setdefault(host, []).append(Check(
                id=CHECK_ID, host=host, probe=probe, status="warn",
                reason="probe %s took %.1f s on this host, %.1f s longer than the median %.1f s of the %d hosts of group %s: "
                       "a slow host (its connection, its CPU or disk, or something that holds its probes up) makes the "
                       "whole run wait" % (probe, seconds, seconds - center, center, len(by_host), group),
                value=round(seconds, 2), unit="s", reference=round(center, 2),
                reference_source="median duration of probe %s over the %d hosts of group %s" % (probe, len(by_host), group),
                threshold="slow when over the median by both %g s and %g %% (and %g robust deviations)" % (
                    SLOW_ABSOLUTE_S, 100 * SLOW_RELATIVE, ROBUST_Z)))
        found.append(entry)
    return found, checks
