"""A probe result's device records ("devices": [{kind, index, uuid, ...}, ...]) and how a dossier table names one."""
from __future__ import annotations

from typing import Any, Dict, List

from ..result_fields import dig


def device_records(data: Any) -> List[Dict[str, Any]]:
    """The result's "devices" entries that are records (a malformed entry is left out)."""
    devices = dig(data, "devices")
    return [device for device in devices if isinstance(device, dict)] if isinstance(devices, list) else []


def device_label(device: Dict[str, Any]) -> str:
    """"CPU" (a probe's CPU path), or "GPU 0 (GPU-8eb0778b-)": the index and the UUID's first 12 characters."""
    if device.get("kind") == "cpu":
        return "CPU"
    uuid = device.get("uuid")
    return "GPU %s%s" % (device.get("index"), " (%s)" % uuid[:12] if isinstance(uuid, str) else "")
