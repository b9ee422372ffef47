# -*- coding: utf-8 -*-
# Copyright: gpufleet.validation contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The GPU firmware health compares: each part's field in a health GPU record, its setting id (drift.<id>, the fleet's
"settings unlike most hosts") and its key under a baseline's ``firmware:`` pins. Pure Python."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Dict, List

from ...probe_kit.kit import Setting, MISSING, is_unavailable


@dataclass(frozen=True)
class FirmwarePart:
    setting_id: str
    field: str          # in data.gpus[i]
    pin_key: str        # in a baseline's firmware:
    words: str


FIRMWARE_PARTS = (
    FirmwarePart("vbios", "vbios_version", "vbios", "VBIOS"),
    FirmwarePart("inforom_image", "inforom_image_version", "inforom_image", "InfoROM image"),
    FirmwarePart("gsp_firmware", "gsp_firmware_version", "gsp", "GSP firmware"),
)


def readable_gpus(data: Dict[str, Any]) -> List[Dict[str, Any]]:
    """The GPU records NVML could read (a GPU it could not is {"index", "error"}: health.gpu_count names it)."""
    gpus = data.get("gpus")
    if not isinstance(gpus, list):
        return []
    return [gpu for gpu in gpus if isinstance(gpu, dict) and "error" not in gpu]


def firmware_settings(data: Dict[str, Any]) -> List[Setting]:
    """One setting per part and host: the distinct versions its GPUs run, sorted and joined ("96.00.A5.00.1A" on a
    uniform host), so a host on another VBIOS stands out among its SKU's hosts. A part no GPU records gives none; one
    no GPU could read gives its first reason."""
    gpus = data.get("gpus", MISSING)
    if is_unavailable(gpus):
        return [Setting(part.setting_id, part.words, gpus) for part in FIRMWARE_PARTS]
    settings = []
    for part in FIRMWARE_PARTS:
        values = [gpu[part.field] for gpu in readable_gpus(data) if part.field in gpu]
        if not values:
            continue
        versions = sorted({value for value in values if isinstance(value, str)})
        unread = [value for value in values if is_unavailable(value)]
        settings.append(Setting(part.setting_id, part.words, ", ".join(versions) if versions else unread[0]))
    return settings
