"""Where a device of a sysfs class sits on the PCI bus: its address, its NUMA node and the bridges above it.

A class entry (/sys/class/infiniband/mlx5_0, /sys/class/net/eth0) has a ``device`` link to its parent in the device
tree; for a PCI function that is /sys/devices/pci<domain>:<bus>/<root port>/.../<address>. The fabric probe places
its NICs and GPUs with it, hostbw finds the GPUs that share a PCIe uplink.
"""
from __future__ import annotations

import os
from typing import Any, Dict, List, Optional

from probelib.fields import unavailable
from probelib.system.pci_path import PCI_ADDRESS, upstream_chain
from probelib.system.sysfs import normalize_bus_id
from probelib.system.sysfs_field import read_value, whole_number

NO_NUMA = "a kernel without NUMA"


def pci_function_dir(class_entry: str) -> Optional[str]:
    """The real directory of the PCI function behind a class entry, or None when its device is no PCI function (a
    virtual device, a virtio device's parent is its virtio bus entry whose own parent is the PCI function)."""
    device = os.path.join(class_entry, "device")
    if not os.path.exists(device):
        return None
    real = os.path.realpath(device)
    for candidate in (real, os.path.dirname(real)):
        if PCI_ADDRESS.match(os.path.basename(candidate)) and os.path.exists(os.path.join(candidate, "config")):
            return candidate
    return None


def numa_node_number(text: str, none_named: str = "-1: a VM, a single-node host, or firmware that gives none") -> int:
    """A numa_node file's number; ValueError where it is -1 (the kernel names none), none_named saying why that is."""
    node = whole_number(text)
    if node < 0:
        raise ValueError("the kernel names no NUMA node for this device (%s)" % none_named)
    return node


def numa_node(function_dir: str) -> Any:
    """The NUMA node the kernel names for the function, or unavailable (-1: it names none)."""
    return read_value(os.path.join(function_dir, "numa_node"), numa_node_number, NO_NUMA)


def pci_place(function_dir: Optional[str]) -> Dict[str, Any]:
    """pci_address, numa_node and pcie_path (the bridges above it, root port first) of a PCI function directory."""
    if function_dir is None:
        reason = "the device has no PCI function in sysfs"
        return {"pci_address": unavailable(reason), "numa_node": unavailable(reason), "pcie_path": unavailable(reason)}
    chain = upstream_chain(function_dir)
    return {"pci_address": normalize_bus_id(os.path.basename(function_dir)), "numa_node": numa_node(function_dir),
            "pcie_path": [address for address, unused_directory in reversed(chain)]}


def driver_of(class_entry: str) -> Any:
    """The kernel driver bound to the class entry's device (the name its device/driver link points to), or
    unavailable."""
    link = os.path.join(class_entry, "device", "driver")
    try:
        return os.path.basename(os.readlink(link))
    except OSError as exc:
        return unavailable("%s: no driver link (%s)" % (link, exc.strerror or exc))


def sorted_names(directory: str) -> List[str]:
    try:
        return sorted(os.listdir(directory))
    except OSError:
        return []
