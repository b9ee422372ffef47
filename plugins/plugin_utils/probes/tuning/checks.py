# -*- coding: utf-8 -*-
# Copyright: gpufleet.validation contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Checks of the tuning probe: what on the GPUs' PCIe paths is a fault rather than a preference.

A setting an operator chose (swappiness, C-states, MaxReadReq) is recorded and compared (judge/settings.py), never
judged here. Judged: ACS redirecting peer traffic between GPUs, a link trained narrower than both ends allow, and
MaxPayload differing along one GPU's path. A link's speed is recorded, not judged: GPUs lower it when idle.
"""
from __future__ import annotations

from typing import Any, Dict, List

from ...probe_kit.kit import (
    make_check, Check, is_unavailable, number_or_none, unavailable_reason, pci_device_label, devices_by_address,
    downtrained, gpu_paths)


def acs_redirect(host: str, data: Dict[str, Any], rule: Dict[str, Any], context: Any) -> List[Check]:
    """warn for each bridge on a GPU's path whose ACS sends peer requests up to the root complex."""
    devices, paths = devices_by_address(data), gpu_paths(data)
    if not paths:
        return [make_check(rule, host, "skip", "no NVIDIA GPU on this host's PCI bus, so no peer traffic to route")]
    if len(paths) < 2:
        return [make_check(rule, host, "skip", "one GPU on this host's PCI bus: no peer traffic between GPUs to route")]
    bridges = sorted({hop for path in paths.values() for hop in path[1:] if hop in devices})
    redirecting, unknown = [], []
    for address in bridges:
        acs = devices[address].get("acs")
        if is_unavailable(acs) or not isinstance(acs, dict):
            unknown.append((address, unavailable_reason(acs)))
        elif acs.get("redirects_peer_traffic"):
            bits = [name for name, key in (("RR", "request_redirect"), ("CR", "completion_redirect"), ("EC", "egress_control"))
                    if acs.get(key)]
            redirecting.append("%s (%s)" % (pci_device_label(devices[address]), "+".join(bits)))
    if redirecting:
        return [make_check(rule, host, "warn", "ACS redirects peer traffic at %s: P2P between the GPUs below goes up to the root "
                           "complex (or fails) instead of across the switch; turn the redirect off (kernel pci=disable_acs_redir=, "
                           "or BIOS) where the IOMMU isolation is not needed" % ", ".join(redirecting),
                           value=len(redirecting), unit="bridges", threshold="no ACS redirect between GPUs")]
    if unknown:
        return [make_check(rule, host, "skip", "ACS not read on %d of %d bridges on the GPUs' paths: %s" % (
            len(unknown), len(bridges), unknown[0][1]))]
    return [make_check(rule, host, "pass", "no ACS redirect on the %d bridges on the GPUs' paths" % len(bridges),
                       value=0, unit="bridges", threshold="no ACS redirect between GPUs")]


def link_width(host: str, data: Dict[str, Any], rule: Dict[str, Any], context: Any) -> List[Check]:
    """warn for each link on a GPU's path trained narrower than both of its ends allow (a reseat, a riser, a bad slot)."""
    devices, paths = devices_by_address(data), gpu_paths(data)
    if not paths:
        return [make_check(rule, host, "skip", "no NVIDIA GPU on this host's PCI bus")]
    on_paths = sorted({hop for path in paths.values() for hop in path if hop in devices})
    narrow = [words for words in (downtrained(devices[address], devices) for address in on_paths) if words]
    widths = [number_or_none((devices[address].get("link") or {}).get("width")) for address in on_paths]
    if narrow:
        return [make_check(rule, host, "warn", "%s: the link carries a fraction of what it could; reseat the GPU or riser, or "
                           "move it to another slot" % "; ".join(narrow), value=len(narrow), unit="links",
                           threshold="every link at the width both ends allow")]
    if not any(width is not None for width in widths):
        return [make_check(rule, host, "skip", "no link width was readable on the GPUs' paths")]
    return [make_check(rule, host, "pass", "every link on the GPUs' paths (%d GPU(s), %d device(s)) runs at the width both "
                       "ends allow (speed is recorded, not judged: GPUs lower it when idle)" % (len(paths), len(on_paths)),
                       value=0, unit="links", threshold="every link at the width both ends allow")]


def max_payload_consistent(host: str, data: Dict[str, Any], rule: Dict[str, Any], context: Any) -> List[Check]:
    """warn for a GPU whose path has more than one MaxPayload: a receiver set below its sender drops the larger writes."""
    devices, paths = devices_by_address(data), gpu_paths(data)
    if not paths:
        return [make_check(rule, host, "skip", "no NVIDIA GPU on this host's PCI bus")]
    checks, unknown = [], []
    for address, path in sorted(paths.items()):
        values = {hop: number_or_none(devices.get(hop, {}).get("max_payload_bytes")) for hop in path}
        known = {hop: int(value) for hop, value in values.items() if value is not None}
        if len(known) < len(path):
            missing = next(hop for hop in path if hop not in known)
            unknown.append(unavailable_reason(devices.get(missing, {}).get("max_payload_bytes")))
            continue
        if len(set(known.values())) > 1:
            checks.append(make_check(rule, host, "warn", "GPU %s: MaxPayload differs along its path (%s); every device on a path "
                                     "should use one value" % (address, ", ".join("%s %d B" % (hop, value) for hop, value in known.items())),
                                     value=min(known.values()), unit="B", threshold="one MaxPayload along the path"))
        else:
            checks.append(make_check(rule, host, "pass", "GPU %s: MaxPayload %d B on all %d devices of its path (P2P copies are "
                                     "posted writes of at most this size)" % (address, next(iter(known.values())), len(path)),
                                     value=next(iter(known.values())), unit="B", threshold="one MaxPayload along the path"))
    if unknown and not checks:
        return [make_check(rule, host, "skip", "MaxPayload not read: %s" % unknown[0])]
    return checks


TUNING_CHECKS = {"acs_redirect": acs_redirect, "link_width": link_width, "max_payload_consistent": max_payload_consistent}
