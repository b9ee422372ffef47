"""PCIe AER error counters since boot: /sys/bus/pci/devices/<dev>/aer_dev_correctable, aer_dev_nonfatal, aer_dev_fatal
(Linux >= 4.19, Documentation/ABI/testing/sysfs-bus-pci-devices-aer_stats: one "<name> <count>" line per error type and
a TOTAL_ERR_COR / TOTAL_ERR_NONFATAL / TOTAL_ERR_FATAL line).

Which devices: every NVIDIA GPU and NVSwitch, every network or InfiniBand controller, and the bridges above them are
always listed (a zero is evidence, and these carry the training traffic); any other device only when one of its totals
is not zero (a failing NVMe or root port matters too, but a hundred zero rows of chipset devices say nothing).
"""
from __future__ import annotations

import os
from typing import Any, Dict, List, Optional, Tuple

from probelib.fields import unavailable
from probelib.system.sysfs import normalize_bus_id, optional_text

AER_FILES = (("correctable", "aer_dev_correctable", "TOTAL_ERR_COR"),
             ("nonfatal", "aer_dev_nonfatal", "TOTAL_ERR_NONFATAL"),
             ("fatal", "aer_dev_fatal", "TOTAL_ERR_FATAL"))
NVIDIA_VENDOR = "0x10de"
NVSWITCH_CLASS_PREFIX = "0x0680"
GPU_CLASS_PREFIX = "0x03"
NIC_CLASS_PREFIX = "0x02"
BRIDGE_CLASS_PREFIX = "0x0604"


def parse_aer_counters(text: str, total_name: str) -> Dict[str, Any]:
    """'RxErr 0\\nBadTLP 2\\n...\\nTOTAL_ERR_COR 2\\n' -> {"total": 2, "counters": {"BadTLP": 2}} (non-zero counters only).
    The total is the kernel's own line; without one (never seen, but not promised), the sum of the counters."""
    counters: Dict[str, int] = {}
    total: Optional[int] = None
    for raw in text.splitlines():
        parts = raw.strip().rsplit(None, 1)
        if len(parts) != 2 or not parts[1].isdigit():
            continue
        name, value = parts[0], int(parts[1])
        if name == total_name:
            total = value
        elif value:
            counters[name] = counters.get(name, 0) + value  # older kernels print several "Undefined" lines
    return {"total": total if total is not None else sum(counters.values()), "counters": counters}


def _role(device_dir: str) -> str:
    vendor = (optional_text(os.path.join(device_dir, "vendor")) or "").lower()
    device_class = (optional_text(os.path.join(device_dir, "class")) or "").lower()
    if vendor == NVIDIA_VENDOR and device_class.startswith(GPU_CLASS_PREFIX):
        return "gpu"
    if vendor == NVIDIA_VENDOR and device_class.startswith(NVSWITCH_CLASS_PREFIX):
        return "nvswitch"
    if device_class.startswith(NIC_CLASS_PREFIX):
        return "nic"
    if device_class.startswith(BRIDGE_CLASS_PREFIX):
        return "bridge"
    return "other"


def _upstream(devices_dir: str, address: str) -> List[str]:
    """The PCI addresses above a device (its bridges), from its real sysfs path, nearest last."""
    path = os.path.realpath(os.path.join(devices_dir, address))
    above = []
    for part in path.split(os.sep)[:-1]:
        try:
            above.append(normalize_bus_id(part))
        except ValueError:
            continue
    return above


def read_device(device_dir: str) -> Optional[Dict[str, Any]]:
    """{correctable, nonfatal, fatal} of one device, or None when it has no AER statistics."""
    counts: Dict[str, Any] = {}
    for key, filename, total_name in AER_FILES:
        text = optional_text(os.path.join(device_dir, filename))
        if text is None:
            continue
        counts[key] = parse_aer_counters(text, total_name)
    return counts or None


def collect_pcie_aer(sys_root: str) -> Any:
    """{"devices": [{pci_address, role, below, correctable, nonfatal, fatal}], "devices_with_aer": n, "listed_because":
    words} or {"unavailable": why}."""
    devices_dir = os.path.join(sys_root, "bus", "pci", "devices")
    try:
        addresses = sorted(os.listdir(devices_dir))
    except OSError as exc:
        return unavailable("%s cannot be listed: %s" % (devices_dir, exc.strerror or exc))
    read: Dict[str, Tuple[str, Dict[str, Any]]] = {}
    wanted = set()
    below: Dict[str, str] = {}
    for address in addresses:
        device_dir = os.path.join(devices_dir, address)
        role = _role(device_dir)
        counts = read_device(device_dir)
        if counts is not None:
            read[address] = (role, counts)
        if role in ("gpu", "nvswitch", "nic"):
            wanted.add(address)
            for bridge in _upstream(devices_dir, address):
                wanted.add(bridge)
                below.setdefault(bridge, role)
    if not read:
        return unavailable("no PCI device here has AER statistics (aer_dev_correctable): the kernel is older than 4.19, "
                           "AER is not enabled (firmware-first or pci=noaer), or no device has the AER capability (a VM's "
                           "emulated devices usually have none)")
    devices = []
    for address, (role, counts) in sorted(read.items()):
        nonzero = any(part["total"] for part in counts.values())
        if address not in wanted and not nonzero:
            continue
        entry: Dict[str, Any] = {"pci_address": address, "role": role, "below": below.get(address) if role == "bridge" else None}
        for key, filename, unused_total in AER_FILES:
            entry[key] = counts.get(key, unavailable("no %s file" % filename))
        devices.append(entry)
    return {"devices": devices, "devices_with_aer": len(read),
            "listed_because": "GPUs, NVSwitches, NICs and the bridges above them always; other devices when a total is not zero"}
