"""Small readers of /proc and /sys files that the probes share."""
from __future__ import annotations

import os
import re
from typing import List, Optional

_BDF = re.compile(r"^(?:([0-9a-fA-F]{1,8}):)?([0-9a-fA-F]{1,2}):([0-9a-fA-F]{1,2})(?:\.([0-7]))?$")


def read_text(path: str, limit_bytes: int = 1 << 20) -> str:
    with open(path, "rb") as handle:
        return handle.read(limit_bytes).decode("utf-8", "replace")


def read_stripped(path: str) -> str:
    return read_text(path).strip()


def read_int(path: str) -> int:
    return int(read_stripped(path))


def normalize_bus_id(bus_id: str) -> str:
    """'00000000:18:00.0' (NVML) and '0000:18:00' (kernel log) both become '0000:18:00.0' as in sysfs."""
    match = _BDF.match(bus_id.strip())
    if not match:
        raise ValueError("not a PCI bus id: %r" % bus_id)
    domain, bus, device, function = match.groups()
    return "%04x:%02x:%02x.%x" % (int(domain or "0", 16), int(bus, 16), int(device, 16), int(function or "0"))


def parse_cpulist(text: str) -> List[int]:
    """'0-3,8,10-11' -> [0, 1, 2, 3, 8, 10, 11]."""
    cpus: List[int] = []
    for part in text.strip().split(","):
        part = part.strip()
        if not part:
            continue
        if "-" in part:
            first, last = part.split("-", 1)
            cpus.extend(range(int(first), int(last) + 1))
        else:
            cpus.append(int(part))
    return cpus


def pci_device_dir(bus_id: str, sys_root: str = "/sys") -> str:
    return os.path.join(sys_root, "bus", "pci", "devices", normalize_bus_id(bus_id))


def optional_text(path: str) -> Optional[str]:
    try:
        return read_stripped(path)
    except OSError:
        return None
