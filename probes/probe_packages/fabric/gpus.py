"""The NVIDIA GPUs on the PCI bus (sysfs, no NVML): address, NUMA node and the bridges above each, root port first."""
from __future__ import annotations

import os
from typing import Any, Dict, List

from probelib.measure.host_gpus import is_nvidia_gpu
from probelib.system.pci_path import address_order
from probelib.system.pci_place import pci_place, sorted_names


def read_gpus(sys_root: str) -> List[Dict[str, Any]]:
    listing = os.path.join(sys_root, "bus", "pci", "devices")
    addresses = [name for name in sorted_names(listing) if is_nvidia_gpu(os.path.join(listing, name))]
    gpus = []
    for address in sorted(addresses, key=address_order):
        place = pci_place(os.path.realpath(os.path.join(listing, address)))
        gpus.append({"pci_address": place["pci_address"], "numa_node": place["numa_node"], "pcie_path": place["pcie_path"]})
    return gpus
