"""Where a PCI device sits in the device tree: the bridges above it up to its root port, and the order of addresses.

/sys/bus/pci/devices/<address> links to /sys/devices/pci<domain>:<bus>/<root port>/.../<device>: the real path is the
device tree, so a device's upstream bridges are the PCI devices among its parent directories, nearest first, and the
topmost of them (the one directly below the host bridge) is the root port. The tuning and fabric probes share this.
"""
from __future__ import annotations

import os
import re
from typing import List, Tuple

from probelib.system.sysfs import normalize_bus_id

PCI_ADDRESS = re.compile(r"^[0-9a-fA-F]{4,8}:[0-9a-fA-F]{2}:[0-9a-fA-F]{2}\.[0-7]$")


def address_order(address: str) -> Tuple[int, ...]:
    """'0000:17:00.0' -> (0, 0x17, 0, 0): domains of five digits (VMD) sort after 0000, not between."""
    return tuple(int(part, 16) for part in re.split(r"[:.]", address))


def upstream_chain(device_directory: str) -> List[Tuple[str, str]]:
    """(address, directory) of each PCI device above ``device_directory`` in the device tree, nearest first."""
    chain = []
    parent = os.path.dirname(device_directory)
    while PCI_ADDRESS.match(os.path.basename(parent)) and os.path.exists(os.path.join(parent, "config")):
        chain.append((normalize_bus_id(os.path.basename(parent)), parent))
        parent = os.path.dirname(parent)
    return chain
