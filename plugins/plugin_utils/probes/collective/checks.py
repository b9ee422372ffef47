# -*- coding: utf-8 -*-
# Copyright: gpufleet.validation contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Checks of the collective probe (and of collective_hosts, the same all-reduce across hosts): every curve's data
verified, the all-reduce over every GPU of the host, busbw against the SKU's known-good value, NVLink's gain over
NCCL_P2P_DISABLE=1."""
from __future__ import annotations

from typing import Any, Callable, Dict, List, Optional

from ...probe_kit.kit import (
    BASELINE_THRESHOLDS, judge_against_baseline, make_check, param_source, reads_params, gpus_covered, Check, Summary,
    summaries_agree as held_to_their_lists, format_quantity, number_or_none, collective_verified, curves_by_name)

# On GPUs the all-reduce runs one rank per device listed (on the CPU world_size is the ranks asked for).
SUMMARIES = (Summary("plan.world_size", "devices", when=(("plan.kind", "cuda"),)),)


def _ranks(data: Dict[str, Any]) -> Optional[int]:
    plan = data.get("plan") if isinstance(data.get("plan"), dict) else {}
    world = plan.get("world_size")
    return world if isinstance(world, int) and not isinstance(world, bool) else None


def collective_gpus_covered(host: str, data: Dict[str, Any], rule: Dict[str, Any], context: Any) -> List[Check]:
    """The all-reduce ran over every GPU this host should have (not judged on the CPU path)."""
    plan = data.get("plan") if isinstance(data.get("plan"), dict) else {}
    ranks = _ranks(data)
    if plan.get("kind") == "cpu" or not ranks:
        return []
    return [gpus_covered("the all-reduce ran over", ranks, rule, host, context)]


@reads_params(*BASELINE_THRESHOLDS)
def collective_busbw(host: str, data: Dict[str, Any], rule: Dict[str, Any], context: Any) -> List[Check]:
    """busbw of the default curve at its largest size against params.known_good[<ranks>] of the SKU's baseline."""
    curve = curves_by_name(data).get("default")
    if not curve or curve.get("error"):
        return []
    plan = data.get("plan") if isinstance(data.get("plan"), dict) else {}
    ranks = _ranks(data)
    value = curve.get("busbw_at_largest_gbps")
    largest = curve.get("largest_bytes")
    what = "all-reduce busbw at %s bytes over %s ranks" % (largest, ranks)
    if plan.get("kind") == "cpu":
        return [make_check(rule, host, "skip", "%s ran on the CPU path (gloo over %s), so there is no GPU value to judge"
                           % (what, "the network" if data.get("hosts") else "loopback"))]
    known = (rule.get("params") or {}).get("known_good") or {}
    candidates = known.get(str(ranks)) if isinstance(known, dict) else None
    candidates = candidates if isinstance(candidates, list) else [candidates] if candidates else []
    present = ((getattr(context, "baseline", None) or {}).get("known_good") or {})
    key = next((name for name in candidates if name in present), candidates[0] if candidates else None)
    if key is None:
        number = number_or_none(value)
        return [make_check(rule, host, "skip", "%s: %s; the rules name no known-good value for %s ranks, so it is compared with "
                           "the fleet's peers only" % (what, format_quantity(number, "GB/s") if number is not None else "not measured",
                                                       ranks),
                           value=number, unit="GB/s")]
    device = {"kind": "cuda", "index": None}
    group_rule = dict(rule, params=dict(rule.get("params") or {}, known_good=key))
    return judge_against_baseline(host, group_rule, context, [(device, value, what)], "GB/s")


@reads_params("min_ratio")
def collective_p2p_gain(host: str, data: Dict[str, Any], rule: Dict[str, Any], context: Any) -> List[Check]:
    """Where NVLink joins the GPUs, the default curve must beat the NCCL_P2P_DISABLE=1 curve by params.min_ratio."""
    curves = curves_by_name(data)
    default, disabled = curves.get("default"), curves.get("p2p_disabled")
    if not default or not disabled or default.get("error") or disabled.get("error"):
        return []
    topology = data.get("topology") if isinstance(data.get("topology"), dict) else {}
    classes = [link for link in topology.get("link_classes") or [] if isinstance(link, str)]
    with_p2p, without = number_or_none(default.get("peak_busbw_gbps")), number_or_none(disabled.get("peak_busbw_gbps"))
    if with_p2p is None or not without:
        return []
    ratio = with_p2p / without
    min_ratio = float(rule["params"]["min_ratio"])
    nvlink = [link for link in classes if link.startswith("NV")]
    words = "peak busbw %s with P2P, %s with NCCL_P2P_DISABLE=1: %s" % (
        format_quantity(with_p2p, "GB/s"), format_quantity(without, "GB/s"), format_quantity(ratio, "×"))
    if not nvlink:
        return [make_check(rule, host, "skip", "%s; no NVLink between the GPUs (%s), so no gain is required"
                           % (words, ", ".join(sorted(set(classes))) or "link classes unknown"), value=round(ratio, 3))]
    status = "pass" if ratio >= min_ratio else "warn"
    if status == "warn":
        words += ("; below %g× although the GPUs are joined by %s: NCCL is probably not using NVLink (see the transports "
                  "NCCL chose in the dossier; check NCCL_P2P_LEVEL, containers without IPC, the fabric manager)"
                  % (min_ratio, ", ".join(sorted(set(nvlink)))))
    else:
        words += " over %s" % ", ".join(sorted(set(nvlink)))
    return [make_check(rule, host, status, words, value=round(ratio, 3), unit="×", reference=min_ratio,
                       reference_source=param_source(rule, "min_ratio"), threshold=">= %g×" % min_ratio)]


def summaries_agree(host: str, data: Dict[str, Any], rule: Dict[str, Any], context: Any) -> List[Check]:
    return held_to_their_lists(SUMMARIES, host, data, rule)


COLLECTIVE_CHECKS: Dict[str, Callable[..., List[Check]]] = {
    "summaries_agree": summaries_agree,
    "verified": collective_verified,
    "gpus_covered": collective_gpus_covered,
    "busbw_largest": collective_busbw,
    "p2p_gain": collective_p2p_gain,
}
