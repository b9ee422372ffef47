# -*- coding: utf-8 -*-
# Copyright: gpufleet.validation contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""HCA firmware: alike within the node (every HCA of one type on one fw_ver), the baseline's pin where it sets one, and
a setting per HCA type that the fleet compares across the SKU's hosts (judge/settings.py: "settings unlike most hosts")."""
from __future__ import annotations

from typing import Any, Dict, List

from ...probe_kit.kit import make_check, Check, Setting
from .ports import expected, rdma_devices


def firmware_by_type(data: Any) -> Dict[str, Dict[str, List[str]]]:
    """{hca_type: {fw_ver: [device names]}} of the devices whose type and firmware were read."""
    devices, unused_why = rdma_devices(data)
    found: Dict[str, Dict[str, List[str]]] = {}
    for device in devices:
        hca_type, version = device.get("hca_type"), device.get("fw_ver")
        if isinstance(hca_type, str) and isinstance(version, str):
            found.setdefault(hca_type, {}).setdefault(version, []).append(str(device.get("name")))
    return found


def _versions_words(versions: Dict[str, List[str]]) -> str:
    return "; ".join("%s on %s" % (", ".join(names), version) for version, names in sorted(versions.items()))


def hca_firmware(host: str, data: Dict[str, Any], rule: Dict[str, Any], context: Any) -> List[Check]:
    """warn when HCAs of one type run different firmware, or differ from the baseline's network.hca_firmware pin."""
    devices, why = rdma_devices(data)
    if not devices:
        return [make_check(rule, host, "skip", "the RDMA devices could not be listed (%s)" % why if why else
                           "no RDMA device on this host: no HCA firmware to compare")]
    by_type = firmware_by_type(data)
    if not by_type:
        return [make_check(rule, host, "skip", "no HCA's type and firmware version could be read")]
    pins, pin_source = expected(context, "hca_firmware")
    pins = pins if isinstance(pins, dict) else {}
    checks = []
    for hca_type, versions in sorted(by_type.items()):
        if len(versions) > 1:
            checks.append(make_check(rule, host, "warn", "%s HCAs run %d firmware versions: %s; flash them to one (mlxfwmanager) so "
                                     "every rail behaves alike" % (hca_type, len(versions), _versions_words(versions)),
                                     value=len(versions), unit="versions", threshold="one firmware per HCA type"))
            continue
        version, names = next(iter(versions.items()))
        pinned = pins.get(hca_type)
        if pinned is not None and str(pinned) != version:
            checks.append(make_check(rule, host, "warn", "%s HCAs (%s) run firmware %s; the baseline pins %s (%s)" % (
                hca_type, ", ".join(names), version, pinned, pin_source), value=version, reference=str(pinned),
                reference_source=pin_source, threshold="the pinned firmware"))
            continue
        pin_words = "the baseline's pin" if pinned is not None else "no pin in the baseline"
        checks.append(make_check(rule, host, "pass", "all %d %s HCAs (%s) run firmware %s (%s)" % (
            len(names), hca_type, ", ".join(names), version, pin_words), value=version,
            reference=str(pinned) if pinned is not None else None, reference_source=pin_source if pinned is not None else "",
            threshold="one firmware per HCA type"))
    return checks


def fabric_settings(data: Dict[str, Any]) -> List[Setting]:
    """Per HCA type: its firmware (all of its versions when they differ) and board ids, compared across the SKU's hosts."""
    found = []
    for hca_type, versions in sorted(firmware_by_type(data).items()):
        found.append(Setting("fabric.hca_firmware", "HCA firmware", ", ".join(sorted(versions)), "HCA type %s" % hca_type))
    devices, unused_why = rdma_devices(data)
    boards: Dict[str, set] = {}
    for device in devices:
        if isinstance(device.get("hca_type"), str) and isinstance(device.get("board_id"), str):
            boards.setdefault(device["hca_type"], set()).add(device["board_id"])
    for hca_type, board_ids in sorted(boards.items()):
        found.append(Setting("fabric.hca_board_id", "HCA board id (PSID)", ", ".join(sorted(board_ids)), "HCA type %s" % hca_type))
    return found


FIRMWARE_CHECKS = {"hca_firmware": hca_firmware}
