"""What memtest's checks and view read from its result: the workers' records, the device each one tested, and how a
worker is named ("GPU 0 (GPU-8eb0778b-) worker 1", "CPU worker 0")."""
from __future__ import annotations

from typing import Any, Dict, List, Optional, Tuple

from ...probe_kit.kit import device_label, device_records, dig


def workers(data: Any) -> List[Dict[str, Any]]:
    found = dig(data, "together", "workers")
    return [record for record in found if isinstance(record, dict)] if isinstance(found, list) else []


def device_of(data: Any, index: Any) -> Dict[str, Any]:
    """The device record ({"kind", "index", "uuid", ...}) of the device entry with this index; {} when none."""
    for entry in device_records(data):
        device = entry.get("device") if isinstance(entry.get("device"), dict) else {}
        if device.get("index") == index:
            return device
    return {}


def gpu_of(device: Dict[str, Any]) -> Optional[Dict[str, Any]]:
    """What make_check files a check under: the GPU, or None on the CPU path."""
    if device.get("kind") != "cuda":
        return None
    uuid = device.get("uuid")
    return {"index": device.get("index"), "uuid": uuid if isinstance(uuid, str) else None}


def worker_label(device: Dict[str, Any], record: Dict[str, Any]) -> str:
    return "%s worker %s" % (device_label(device) if device else "device %s" % record.get("device_index"), record.get("worker"))


def labelled_workers(data: Any) -> List[Tuple[Dict[str, Any], Dict[str, Any], str]]:
    """(device, worker record, its label) of every worker."""
    found = []
    for record in workers(data):
        device = device_of(data, record.get("device_index"))
        found.append((device, record, worker_label(device, record)))
    return found
