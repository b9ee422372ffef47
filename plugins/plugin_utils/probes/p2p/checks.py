# -*- coding: utf-8 -*-
# Copyright: gpufleet.validation contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Checks of the p2p probe: every ordered GPU pair measured, verified, and fast enough for its link class.

A pair is held against the SKU's known-good value for its link class (NVLink, PCIe within a NUMA node, PCIe across)
and against the median of the host's other pairs of the same class, so a slow link stands out without a baseline.
"""
from __future__ import annotations

from typing import Any, Callable, Dict, List, Tuple

from ...probe_kit.kit import (
    BASELINE_THRESHOLDS, judge_against_baseline, make_check, param_source, reads_params, gpus_covered, Check, median,
    format_quantity, number_or_none, path_between)

PCIE_PATHS = ("PIX", "PXB", "PHB", "NODE", "SYS")


def _pairs(data: Dict[str, Any]) -> List[Dict[str, Any]]:
    pairs = data.get("pairs")
    return [pair for pair in pairs if isinstance(pair, dict)] if isinstance(pairs, list) else []


def pair_label(pair: Dict[str, Any]) -> str:
    link = pair.get("link_class")
    link_text = link if isinstance(link, str) else "link class unknown"
    return "GPU %s → GPU %s (%s)" % (pair.get("src"), pair.get("dst"), link_text)


def _source_gpu(pair: Dict[str, Any]) -> Dict[str, Any]:
    uuid = pair.get("src_uuid")
    return {"index": pair.get("src"), "uuid": uuid if isinstance(uuid, str) else None, "kind": "cuda"}


def link_group(pair: Dict[str, Any]) -> str:
    """nvlink, pcie_same_numa, pcie_cross_numa or unknown: the class a known-good value exists for.

    PCIe pairs are split by NUMA placement where sysfs says it; else by the path (SYS crosses the inter-socket link).
    """
    kind = pair.get("link_kind")
    if kind == "nvlink":
        return "nvlink"
    if kind == "pcie":
        same = pair.get("same_numa")
        if isinstance(same, bool):
            return "pcie_same_numa" if same else "pcie_cross_numa"
        path = pair.get("pcie_path")
        if path == "SYS":
            return "pcie_cross_numa"
        if path in PCIE_PATHS:
            return "pcie_same_numa"
    return "unknown"


def _headline(pair: Dict[str, Any], section: str) -> Any:
    """The section's headline; a pair whose later phase failed keeps what it measured before."""
    part = pair.get(section)
    value = part.get("headline_gbps") if isinstance(part, dict) else None
    if number_or_none(value) is not None:
        return value
    if pair.get("error"):
        return {"unavailable": "the pair failed: %s" % pair["error"]}
    return {"unavailable": "no %s measurement" % section}


def _against_link_class(section: str, what: str) -> Callable[..., List[Check]]:
    """Each pair's headline against params.known_good[<link group>]; groups without a known-good value are skipped."""
    def check(host: str, data: Dict[str, Any], rule: Dict[str, Any], context: Any) -> List[Check]:
        params = rule.get("params", {})
        by_group: Dict[str, List[Tuple[Dict[str, Any], Any, str]]] = {}
        for pair in _pairs(data):
            if pair.get("error") and not pair.get("peer_access", True):
                continue  # p2p.pairs reports a pair without peer access; no rate exists to judge
            group = link_group(pair)
            by_group.setdefault(group, []).append((dict(_source_gpu(pair)), _headline(pair, section),
                                                   "%s %s" % (pair_label(pair), what)))
        checks: List[Check] = []
        known = params.get("known_good") if isinstance(params.get("known_good"), dict) else {}
        datasheet = params.get("datasheet") if isinstance(params.get("datasheet"), dict) else {}
        for group in sorted(by_group):
            group_rule = dict(rule, params=dict(params, known_good=known.get(group), datasheet=datasheet.get(group)))
            if known.get(group) is None:
                for device, value, words in by_group[group]:
                    rate = format_quantity(value, "GB/s") if number_or_none(value) is not None else "not measured"
                    checks.append(make_check(rule, host, "skip", "%s: %s; the rules name no known-good value for %s links, "
                                             "so it is compared with the host's other pairs of its class only"
                                             % (words, rate, group.replace("_", " ")), device))
                continue
            checks.extend(judge_against_baseline(host, group_rule, context, by_group[group], "GB/s"))
        explain_pcie_pairs(_pairs(data), checks, getattr(context, "host_data", None) or {})
        return checks
    return reads_params(*BASELINE_THRESHOLDS)(check)


def _bus_ids_by_uuid(health: Any) -> Dict[str, str]:
    gpus = health.get("gpus") if isinstance(health, dict) else None
    found = {}
    for gpu in gpus if isinstance(gpus, list) else []:
        bus_id = (gpu.get("pci") or {}).get("bus_id") if isinstance(gpu, dict) and isinstance(gpu.get("pci"), dict) else None
        if isinstance(gpu, dict) and isinstance(gpu.get("uuid"), str) and isinstance(bus_id, str):
            found[gpu["uuid"]] = bus_id.lower()
    return found


def explain_pcie_pairs(pairs: List[Dict[str, Any]], checks: List[Check], host_data: Dict[str, Any]) -> None:
    """Each PCIe pair's checks say what the recorded tuning shows on its path (probe_kit/shared/pcie_path.py); a low pair names the
    likely cause. Without a tuning result the checks stay as they are."""
    tuning = host_data.get("tuning")
    if not isinstance(tuning, dict):
        return
    bus_ids = _bus_ids_by_uuid(host_data.get("health"))
    for pair in pairs:
        if pair.get("link_kind") != "pcie":
            continue
        src, dst = bus_ids.get(pair.get("src_uuid")), bus_ids.get(pair.get("dst_uuid"))
        if src is None or dst is None:
            continue
        findings = path_between(tuning, src, dst, pair.get("same_numa"))
        label = pair_label(pair)
        for found in checks:
            if not found.reason.startswith("GPU") or label not in found.reason:
                continue
            if findings.unknown:
                found.reason += "; %s" % findings.unknown
            elif found.status in ("warn", "fail"):
                found.reason += ("; likely cause: %s (%s)" % ("; ".join(findings.causes), findings.summary) if findings.causes
                                 else "; nothing the tuning probe recorded on the path explains it (%s)" % findings.summary)
            else:
                found.reason += "; path: %s" % findings.summary


@reads_params("fail_below_pct", "warn_below_pct")
def pair_vs_host_median(host: str, data: Dict[str, Any], rule: Dict[str, Any], context: Any) -> List[Check]:
    """Each pair's unidirectional headline against the median of the host's pairs of the same link class."""
    params = rule.get("params", {})
    fail_pct, warn_pct = float(params["fail_below_pct"]), float(params["warn_below_pct"])
    classes: Dict[str, List[Tuple[Dict[str, Any], float]]] = {}
    for pair in _pairs(data):
        value = number_or_none(_headline(pair, "unidirectional"))
        link = pair.get("link_class")
        if value is not None and isinstance(link, str):
            classes.setdefault(link, []).append((pair, value))
    checks: List[Check] = []
    for link in sorted(classes):
        members = classes[link]
        if len(members) < 2:
            pair, value = members[0]
            checks.append(make_check(rule, host, "skip", "%s: the only %s pair on this host (%s); nothing to compare it with"
                                     % (pair_label(pair), link, format_quantity(value, "GB/s")), _source_gpu(pair)))
            continue
        centre = median([value for unused_pair, value in members])
        for pair, value in members:
            percent = 100.0 * value / centre if centre else 0.0
            status = "pass" if percent >= warn_pct else ("warn" if percent >= fail_pct else "fail")
            words = "%s: %s, %s of the median of the host's %d %s pairs (%s)" % (
                pair_label(pair), format_quantity(value, "GB/s"), format_quantity(percent, "%"), len(members), link,
                format_quantity(centre, "GB/s"))
            if status != "pass":
                words += "; below %g %%: this link is slower than its siblings (check its NVLink error counters and link state)" % (
                    warn_pct if status == "warn" else fail_pct)
            checks.append(make_check(rule, host, status, words, _source_gpu(pair), value=round(value, 3), unit="GB/s",
                                     reference=round(centre, 3), reference_source="median of this host's %s pairs" % link,
                                     threshold=">= %g %% of the median (warn below %g %%); %s" % (
                                         fail_pct, warn_pct, param_source(rule, "fail_below_pct"))))
    explain_pcie_pairs(_pairs(data), checks, getattr(context, "host_data", None) or {})
    return checks


def p2p_gpus_covered(host: str, data: Dict[str, Any], rule: Dict[str, Any], context: Any) -> List[Check]:
    """The pairs were measured over every GPU this host should have."""
    devices = data.get("devices") if isinstance(data.get("devices"), list) else []
    if not devices:
        return []
    return [gpus_covered("the pairs were measured over", len(devices), rule, host, context)]


def pairs_measured(host: str, data: Dict[str, Any], rule: Dict[str, Any], context: Any) -> List[Check]:
    """Every ordered pair of the visible GPUs was measured with peer access and its copies verified."""
    devices = data.get("devices") if isinstance(data.get("devices"), list) else []
    pairs = _pairs(data)
    checks: List[Check] = []
    expected = len(devices) * (len(devices) - 1)
    if devices and len(pairs) != expected:
        checks.append(make_check(rule, host, "fail", "%d ordered pairs reported for %d GPUs; %d expected (every GPU to every other)"
                                 % (len(pairs), len(devices), expected), value=len(pairs), reference=expected,
                                 threshold="== N·(N−1)"))
    for pair in pairs:
        gpu = _source_gpu(pair)
        if pair.get("peer_access") is False:
            why = pair.get("error") or "torch.cuda.can_device_access_peer is false"
            checks.append(make_check(rule, host, "fail", "%s: no peer access (%s); the GPUs cannot copy to each other directly, "
                                     "so NCCL and every P2P copy go through host memory — check the NVLink/PCIe topology, "
                                     "ACS/IOMMU settings and the fabric manager" % (pair_label(pair), why),
                                     gpu, value=False, reference=True, threshold="peer access"))
        elif pair.get("error"):
            checks.append(make_check(rule, host, "error", "%s: the pair failed: %s" % (pair_label(pair), pair["error"]), gpu))
        elif pair.get("verified") is False:
            checks.append(make_check(rule, host, "fail", "%s: the data copied between the GPUs did not match its source — "
                                     "corruption on this path; do not use the node" % pair_label(pair), gpu,
                                     value=False, reference=True, threshold="copies verified"))
        elif pair.get("verified") is True:
            checks.append(make_check(rule, host, "pass", "%s: peer access, every copy verified" % pair_label(pair), gpu,
                                     value=True, reference=True, threshold="copies verified"))
    return checks


P2P_CHECKS: Dict[str, Callable[..., List[Check]]] = {
    "pairs_measured": pairs_measured,
    "gpus_covered": p2p_gpus_covered,
    "unidirectional_vs_link_class": _against_link_class("unidirectional", "unidirectional copy"),
    "bidirectional_vs_link_class": _against_link_class("bidirectional", "bidirectional copy (both directions summed)"),
    "pair_vs_host_median": pair_vs_host_median,
}
