# -*- coding: utf-8 -*-
# Copyright: gpufleet.validation contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The PCIe path between two GPUs as the tuning probe recorded it, and what on it can slow peer traffic.

P2P copies are posted writes: MaxPayload bounds them and MaxReadReq does not. ACS redirect on a bridge sends peer
requests up to the root complex; a link trained narrower than both ends allow carries less; a path that leaves the
NUMA node crosses the inter-socket link. Pure: reads the tuning result's pci_devices and gpus (schemas/tuning.schema.json).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Dict, List, Optional

from ...result_fields import is_unavailable, number_or_none

ROLE_WORDS = {"gpu": "GPU", "bridge": "bridge", "root_port": "root port"}
ACS_BITS = (("SV", "source_validation"), ("TB", "translation_blocking"), ("RR", "request_redirect"),
            ("CR", "completion_redirect"), ("UF", "upstream_forwarding"), ("EC", "egress_control"), ("DT", "direct_translated"))


def devices_by_address(tuning: Any) -> Dict[str, Dict[str, Any]]:
    devices = tuning.get("pci_devices") if isinstance(tuning, dict) else None
    return {device["address"]: device for device in devices or []
            if isinstance(device, dict) and isinstance(device.get("address"), str)}


def gpu_paths(tuning: Any) -> Dict[str, List[str]]:
    """{GPU address: [the GPU, then each bridge up to its root port]}."""
    gpus = tuning.get("gpus") if isinstance(tuning, dict) else None
    return {gpu["address"]: [gpu["address"]] + [hop for hop in gpu.get("path") or [] if isinstance(hop, str)]
            for gpu in gpus or [] if isinstance(gpu, dict) and isinstance(gpu.get("address"), str)}


def pci_device_label(device: Dict[str, Any]) -> str:
    return "%s %s" % (ROLE_WORDS.get(device.get("role"), "device"), device.get("address"))


def acs_text(acs: Any) -> str:
    """The ACS control bits that are on ("RR CR"), "off" when none, "absent" without the capability."""
    if not isinstance(acs, dict) or is_unavailable(acs):
        return ""
    if not acs.get("present"):
        return "absent"
    return " ".join(name for name, key in ACS_BITS if acs.get(key)) or "off"


def link_width_capable(device: Dict[str, Any], devices: Dict[str, Dict[str, Any]]) -> Optional[int]:
    """The width the link above a device can train to: the narrower of its two ends' maximum (None if unknown)."""
    own = number_or_none((device.get("link") or {}).get("max_width"))
    upstream = devices.get(device.get("upstream") or "")
    other = number_or_none(((upstream or {}).get("link") or {}).get("max_width")) if upstream else None
    known = [int(value) for value in (own, other) if value is not None]
    return min(known) if known else None


def downtrained(device: Dict[str, Any], devices: Dict[str, Dict[str, Any]]) -> Optional[str]:
    """Words when the link above the device runs narrower than both ends allow, else None."""
    width = number_or_none((device.get("link") or {}).get("width"))
    capable = link_width_capable(device, devices)
    if width is None or capable is None or width >= capable:
        return None
    return "%s link trained at x%d of x%d" % (pci_device_label(device), width, capable)


@dataclass
class PathFindings:
    """What the recorded tuning says about one pair's path; causes are the likely limits, in words."""

    devices: List[Dict[str, Any]] = field(default_factory=list)
    causes: List[str] = field(default_factory=list)
    summary: str = ""
    unknown: str = ""


def _values(devices: List[Dict[str, Any]], key: str) -> List[int]:
    return [int(value) for value in (number_or_none(device.get(key)) for device in devices) if value is not None]


def path_between(tuning: Any, src_address: str, dst_address: str, same_numa: Any = None) -> PathFindings:
    """The devices from one GPU up to the first bridge both share and down to the other, and what on them limits P2P."""
    devices, paths = devices_by_address(tuning), gpu_paths(tuning)
    found = PathFindings()
    if src_address not in paths or dst_address not in paths:
        found.unknown = "the tuning result lists no PCIe path for %s" % " or ".join(
            address for address in (src_address, dst_address) if address not in paths)
        return found
    up, down = paths[src_address], paths[dst_address]
    shared = next((hop for hop in up if hop in down), None)
    hops = (up[:up.index(shared) + 1] + list(reversed(down[:down.index(shared)]))) if shared else up + list(reversed(down))
    found.devices = [devices[hop] for hop in hops if hop in devices]
    bridges = [device for device in found.devices if device.get("role") != "gpu"]
    redirecting = [pci_device_label(device) for device in bridges
                   if isinstance(device.get("acs"), dict) and device["acs"].get("redirects_peer_traffic")]
    if redirecting:
        found.causes.append("ACS redirects peer traffic at %s, so each P2P request goes up to the root complex and back"
                            % ", ".join(redirecting))
    payloads = _values(found.devices, "max_payload_bytes")
    if payloads and min(payloads) < 256:
        found.causes.append("MaxPayload is %d B on the path (P2P copies are posted writes of at most that size)" % min(payloads))
    for device in found.devices:
        words = downtrained(device, devices)
        if words:
            found.causes.append(words)
    if same_numa is False:
        found.causes.append("the pair crosses NUMA nodes, so its traffic crosses the inter-socket link")
    parts = []
    if payloads:
        parts.append("MaxPayload %s B" % "/".join(str(value) for value in sorted(set(payloads))))
    reads = _values(found.devices, "max_read_request_bytes")
    if reads:
        parts.append("MaxReadReq %s B (bounds reads, not P2P's posted writes)" % "/".join(str(value) for value in sorted(set(reads))))
    acs_known = [device for device in bridges if isinstance(device.get("acs"), dict) and not is_unavailable(device["acs"])]
    if bridges and len(acs_known) == len(bridges):
        parts.append("ACS redirect on %d of %d bridges" % (len(redirecting), len(bridges)))
    elif bridges:
        parts.append("ACS unknown on %d of %d bridges" % (len(bridges) - len(acs_known), len(bridges)))
    parts.append("%d hop(s) via %s" % (len(found.devices) - 1, pci_device_label(devices[shared]) if shared in devices else "the host bridge"))
    found.summary = "; ".join(parts)
    return found
