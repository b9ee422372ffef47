# -*- coding: utf-8 -*-
# Copyright: gpufleet.validation contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""A measurement that has neither reference is not a pass: no known-good value (the host's GPUs match no usable
baseline) and too few peers for the fleet comparison.

The baseline check leaves such a measurement a skip that waits for the fleet median (reference_source names it, see
peers_only_source); once the fleet comparison is known, mark_not_compared makes the skips it could not decide a warn
that says why: "not compared: no usable baseline (...) and 2 hosts of group ... are too few to compare (at least 3
needed)". A SKU whose baseline loads but lacks a key keeps its skip: that baseline holds no number for it on purpose.
"""
from __future__ import annotations

from typing import Iterable, List, Optional, Sequence

from .model import Check

PEERS_ONLY_SOURCE = "the fleet median, for want of a known-good value"
# Where a peers-only skip's reason says why it waited (baseline_checks writes it); a warn keeps what comes before.
NO_KNOWN_GOOD = "; no known-good value"
FLEET_CHECK_PREFIX = "fleet."
PROBLEM_CHARACTERS = 300  # of each broken baseline file's problem, in the reason


def peers_only_source(metric_id: str) -> str:
    """The reference_source of a check left to the fleet comparison of metric_id ("" where it has no metric id)."""
    return "%s (%s)" % (PEERS_ONLY_SOURCE, metric_id) if metric_id else PEERS_ONLY_SOURCE


def _metric_of(source: str) -> Optional[str]:
    rest = source[len(PEERS_ONLY_SOURCE):]
    return rest[2:-1] if rest.startswith(" (") and rest.endswith(")") else None


def why_no_baseline(sku_reason: str, baseline_problems: Sequence[str]) -> str:
    """"no usable baseline (<how identification failed>; <the baseline files that could not be loaded>)"."""
    broken = ["%s%s" % (problem[:PROBLEM_CHARACTERS], "..." if len(problem) > PROBLEM_CHARACTERS else "")
              for problem in baseline_problems]
    if broken:
        return "no usable baseline (%s; the baseline files that could not be loaded: %s)" % (sku_reason, " | ".join(broken))
    return "no usable baseline (%s)" % sku_reason


def mark_not_compared(checks: Iterable[Check], fleet_checks: Sequence[Check], sku: Optional[str], sku_reason: str,
                      baseline_problems: Sequence[str], group: str, group_hosts: int, min_peers: int) -> List[Check]:
    """The checks of a host without a SKU that waited for the fleet median where the fleet compared nothing for that
    metric and GPU (or device), turned warn with the reason (in place; returned too). A host with a SKU is left as it is."""
    marked: List[Check] = []
    if sku is not None:
        return marked
    # The fleet comparison counts GPUs: 2 hosts of 2 GPUs are 4 values, enough to compare GPUs, but their median lies
    # between the hosts, so a pass there says nothing of either host's level: with fewer hosts than min_peers only a
    # flagged value (warn) is a decision.
    vouching = ("pass", "warn") if group_hosts >= min_peers else ("warn",)
    decided = [check for check in fleet_checks if check.id.startswith(FLEET_CHECK_PREFIX) and check.status in vouching]
    decided_metrics = {(check.id[len(FLEET_CHECK_PREFIX):], check.gpu_uuid, check.device) for check in decided}
    decided_probes = {check.probe for check in decided}
    for check in checks:
        if check.status != "skip" or not check.reference_source.startswith(PEERS_ONLY_SOURCE):
            continue
        metric = _metric_of(check.reference_source)
        if (metric, check.gpu_uuid, check.device) in decided_metrics or (not metric and check.probe in decided_probes):
            continue
        check.status = "warn"
        check.reason = "%s; not compared: %s and %d host%s of group %s %s too few to compare (at least %d needed)" % (
            check.reason.split(NO_KNOWN_GOOD)[0], why_no_baseline(sku_reason, baseline_problems), group_hosts,
            "" if group_hosts == 1 else "s", group, "is" if group_hosts == 1 else "are", min_peers)
        marked.append(check)
    return marked
