"""Which together workers share a PCIe uplink: the GPUs below one root port share its link to the CPU (a PCIe switch
with two GPUs behind it has one uplink), and the workers on one GPU share that GPU's link.

A GPU's place comes from sysfs (probelib.system.pci_place: the bridges above it, root port first). Where sysfs shows no
bridge above the GPU (a VM's flat bus) or cannot be read, only the workers on the same GPU are known to share.
"""
from __future__ import annotations

import os
from typing import Any, Dict, List

from probelib.fields import is_unavailable, unavailable
from probelib.system.pci_place import pci_place
from probelib.system.sysfs import pci_device_dir

NO_BRIDGE = ("sysfs shows no PCI bridge above the GPU (a VM's flat bus?): whether it shares an uplink with other GPUs "
             "is not known, only its own workers are counted")


def pcie_path(bus_id: Any, sys_root: str = "/sys") -> Any:
    """The bridges above the GPU at ``bus_id``, root port first, or unavailable."""
    if is_unavailable(bus_id):
        return bus_id
    directory = pci_device_dir(bus_id, sys_root)
    if not os.path.exists(directory):
        return unavailable("%s does not exist" % directory)
    return pci_place(os.path.realpath(directory))["pcie_path"]


def uplink_bridge(path: Any) -> Any:
    """The root port whose link the GPU's copies to the host cross, or unavailable."""
    if is_unavailable(path):
        return path
    if not path:
        return unavailable(NO_BRIDGE)
    return path[0]


def sharing(workers: List[Dict[str, Any]], bridges: Dict[int, Any]) -> Dict[int, Dict[str, Any]]:
    """{worker: {uplink_sharers, uplink_bridge, uplink_gpus}}: how many workers copy through the same uplink (itself
    included), the root port, the GPUs below it. ``workers`` are Worker dicts, ``bridges`` {device_index: bridge}."""
    found = {}
    for worker in workers:
        bridge = bridges.get(worker["device_index"], unavailable("the GPU's place was not read"))
        if is_unavailable(bridge):
            same = [other for other in workers if other["device_index"] == worker["device_index"]]
        else:
            same = [other for other in workers if bridges.get(other["device_index"]) == bridge]
        found[worker["worker"]] = {"uplink_sharers": len(same), "uplink_bridge": bridge,
                                   "uplink_gpus": sorted({other["device_index"] for other in same})}
    return found
