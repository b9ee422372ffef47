# -*- coding: utf-8 -*-
# Copyright: gpufleet.validation contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""hostbw's together phase judged: each worker's pinned H2D and D2H rate against the alone rate divided by the workers
that share its PCIe uplink (the workers on GPUs below one root port, its own included): two GPUs behind one switch are
each owed half the alone rate, a GPU with its own uplink all of it."""
from __future__ import annotations

from typing import Any, Dict, List

from ...probe_kit.kit import (
    make_check, param_source, reads_params, Check, format_quantity, is_unavailable, number_or_none, unavailable_reason,
    each_worker, percent_bounds_and_reference, percent_status)
from .together_share import DIRECTIONS, share_of, sharers_of

WORST_FIRST = ("error", "fail", "warn", "pass", "skip")


def uplink_words(result: Dict[str, Any], sharers: int) -> str:
    bridge = result.get("uplink_bridge")
    where = ("root port %s" % bridge) if isinstance(bridge, str) else "(%s)" % unavailable_reason(bridge)
    gpus = result.get("uplink_gpus") if isinstance(result.get("uplink_gpus"), list) else []
    return "uplink %s shared by %d worker%s on GPU%s %s" % (
        where, sharers, "" if sharers == 1 else "s", "" if len(gpus) == 1 else "s", ", ".join(str(gpu) for gpu in gpus))


@reads_params("warn_below_pct", "fail_below_pct")
def hostbw_together_uplink(host: str, data: Dict[str, Any], rule: Dict[str, Any], context: Any) -> List[Check]:
    warn_below, fail_below, reference = percent_bounds_and_reference(rule, data)

    def judge_one(worker: Dict[str, Any], result: Dict[str, Any], gpu: Dict[str, Any], label: str) -> Check:
        if worker.get("kind") != "cuda":
            return make_check(rule, host, "skip", "%s copied host to host at %s: the CPU path crosses no PCIe uplink, so "
                              "it is not judged" % (label, format_quantity(number_or_none(result.get("h2h_gbps")), "GB/s")), gpu)
        if not isinstance(reference, dict) or is_unavailable(reference):
            return make_check(rule, host, "skip", "%s: no alone reference to compare with: %s" % (
                label, unavailable_reason(reference) if is_unavailable(reference) else "the result holds none"), gpu)
        sharers = sharers_of(worker, result)
        parts, statuses, lowest = [], [], None
        for direction in DIRECTIONS:
            share = share_of(worker, result, reference, direction)
            if share is None:
                missing = number_or_none(result.get("%s_pinned_gbps" % direction)) is None
                parts.append("%s not compared (%s)" % (direction.upper(), "no together rate" if missing else "no alone rate"))
                statuses.append("error" if missing else "skip")
                continue
            lowest = share.pct if lowest is None else min(lowest, share.pct)
            statuses.append(percent_status(share.pct, rule["params"]))
            parts.append("%s %s, %s of its share %s (alone %s)" % (
                direction.upper(), format_quantity(result.get("%s_pinned_gbps" % direction), "GB/s"),
                format_quantity(round(share.pct, 1), "%"), format_quantity(round(share.owed_gbps, 2), "GB/s"),
                format_quantity(share.alone_gbps, "GB/s")))
        status = next(status for status in WORST_FIRST if status in statuses)
        words = "%s, pinned, every GPU copying at once: %s; %s (the alone rates from GPU %s at %s)" % (
            label, "; ".join(parts), uplink_words(result, sharers), reference.get("device_index"),
            format_quantity(reference.get("size_mib"), "MiB"))
        if result.get("size_mib") != reference.get("size_mib"):
            words += "; this worker copied %s buffers (its share of the memory)" % format_quantity(result.get("size_mib"), "MiB")
        if status in ("warn", "fail"):
            words += ("; below %g %%: this GPU's host link is slower with the node copying at once than its uplink's "
                      "sharing explains (a narrower uplink, a switch or root port limit)" % (warn_below if status == "warn" else fail_below))
        return make_check(rule, host, status, words, gpu, value=round(lowest, 1) if lowest is not None else None, unit="%",
                          reference=fail_below, reference_source=param_source(rule, "fail_below_pct"),
                          threshold=">= %g %% of alone / uplink sharers, each direction (warn below %g %%)" % (fail_below, warn_below))

    return each_worker(rule, host, data, judge_one)
