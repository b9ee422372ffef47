"""Each GPU's nearest RDMA device, by where both sit in the PCI tree and which NUMA node the kernel names.

From nearest to farthest: on the same PCIe switch (the two paths share a bridge below the root port), below the same
root port, on the same NUMA node, on another NUMA node. Among devices equally near, the one sharing more bridges,
then the first by name, is chosen. Nothing is guessed: a relation that needs a NUMA node the kernel does not name is
not claimed.
"""
from __future__ import annotations

from typing import Any, Dict, List, Optional, Tuple

from probelib.fields import is_unavailable, unavailable

RELATIONS = ("same_pcie_switch", "same_root_port", "same_numa_node", "other_numa_node")
NO_RDMA_DEVICE = "the host has no RDMA device (/sys/class/infiniband lists none)"


def shared_bridges(one: List[str], other: List[str]) -> int:
    """How many bridges two root-first paths share from the root port down."""
    count = 0
    for mine, theirs in zip(one, other):
        if mine != theirs:
            break
        count += 1
    return count


def relation(gpu: Dict[str, Any], nic: Dict[str, Any]) -> Optional[str]:
    """The relation of RELATIONS, or None when the paths share no root port and a NUMA node is unknown."""
    gpu_path, nic_path = gpu.get("pcie_path"), nic.get("pcie_path")
    shared = shared_bridges(gpu_path, nic_path) if isinstance(gpu_path, list) and isinstance(nic_path, list) else 0
    if shared >= 2:
        return "same_pcie_switch"
    if shared == 1:
        return "same_root_port"
    gpu_node, nic_node = gpu.get("numa_node"), nic.get("numa_node")
    if isinstance(gpu_node, int) and isinstance(nic_node, int):
        return "same_numa_node" if gpu_node == nic_node else "other_numa_node"
    return None


def nearest_nic(gpu: Dict[str, Any], rdma_devices: Any) -> Dict[str, Any]:
    if is_unavailable(rdma_devices):
        return unavailable("the RDMA devices could not be read: %s" % rdma_devices["unavailable"])
    if not rdma_devices:
        return unavailable(NO_RDMA_DEVICE)
    ranked: List[Tuple[int, int, str, Dict[str, Any], str]] = []
    for device in rdma_devices:
        found = relation(gpu, device)
        if found is None:
            continue
        shared = shared_bridges(gpu["pcie_path"], device["pcie_path"]) if found in RELATIONS[:2] else 0
        ranked.append((RELATIONS.index(found), -shared, device["name"], device, found))
    if not ranked:
        return unavailable("no RDMA device shares a root port with this GPU, and the kernel names no NUMA node for the "
                           "GPU or the devices, so which is nearer is unknown")
    unused_rank, unused_shared, name, device, found = min(ranked, key=lambda entry: entry[:3])
    return {"rdma_device": name, "pci_address": device["pci_address"], "relation": found}


def with_nearest_nics(gpus: List[Dict[str, Any]], rdma_devices: Any) -> List[Dict[str, Any]]:
    return [dict(gpu, nearest_nic=nearest_nic(gpu, rdma_devices)) for gpu in gpus]
