"""Dossier section of the tuning probe: every GPU's PCIe path, device by device, and the kernel's settings."""
from __future__ import annotations

from typing import Any, Dict, List

from ...probe_kit.kit import (
    Cell, cell, table, MISSING, dig, is_unavailable, iter_leaves, json_path, ProbeSection, acs_text)


def _acs_cell(acs: Any) -> Cell:
    if is_unavailable(acs) or not isinstance(acs, dict):
        return cell("acs", acs if is_unavailable(acs) else MISSING)
    return Cell(acs_text(acs), "peer traffic redirected to the root complex" if acs.get("redirects_peer_traffic") else "",
                "warn" if acs.get("redirects_peer_traffic") else "")


def _link_cell(link: Any, current: str, maximum: str, unit: str) -> Cell:
    value, top = dig(link, current), dig(link, maximum)
    if value is MISSING or is_unavailable(value):
        return cell(current, value)
    shown = "%g" % value if isinstance(value, float) else str(value)
    top_text = "%g" % top if isinstance(top, float) else str(top) if top is not MISSING and not is_unavailable(top) else "?"
    return Cell("%s%s of %s%s" % (shown, unit, top_text, unit))


def tuning_view(data: Any) -> Dict[str, Any]:
    rows: List[List[Cell]] = []
    devices = dig(data, "pci_devices")
    for device in devices if isinstance(devices, list) else []:
        if not isinstance(device, dict):
            continue
        link = device.get("link") if isinstance(device.get("link"), dict) else {}
        aspm = device.get("aspm", MISSING)
        rows.append([Cell(str(device.get("address"))), Cell(str(device.get("role", "?")).replace("_", " ")),
                     cell("numa_node", device.get("numa_node", MISSING)),
                     _link_cell(link, "width", "max_width", ""), _link_cell(link, "speed_gts", "max_speed_gts", " GT/s"),
                     cell("max_payload_bytes", device.get("max_payload_bytes", MISSING)),
                     cell("max_payload_supported_bytes", device.get("max_payload_supported_bytes", MISSING)),
                     cell("max_read_request_bytes", device.get("max_read_request_bytes", MISSING)),
                     cell("aspm", aspm.get("control", MISSING) if isinstance(aspm, dict) and not is_unavailable(aspm) else aspm),
                     _acs_cell(device.get("acs"))])
    kernel_rows = [[Cell(json_path(parts)), cell(str(parts[-1]) if parts else "", value)]
                   for parts, value in iter_leaves(dig(data, "kernel")) if parts]
    access = dig(data, "config_space")
    note = str(access.get("note", "")) if isinstance(access, dict) else ""
    return {"note": note, "plots": [], "tables": [
        table("PCIe: every GPU and each bridge up to its root port", ["device", "role", "NUMA node", "link width", "link speed",
              "MaxPayload", "MaxPayload supported", "MaxReadReq", "ASPM", "ACS control"], rows, "no NVIDIA GPU on the PCI bus"),
        table("Kernel, CPU and memory settings", ["setting", "value"], kernel_rows, "not recorded")]}


SECTION = ProbeSection(tuning_view)
