"""What joins two GPUs, read from a topology entry (probelib.nvml.topology, as health records it): NVLink (direct or through NVSwitch) or a PCIe path.

Pure: the entry is a dict as probelib.nvml.topology.collect_topology writes it (unordered, gpu_a < gpu_b);
``src_is_a`` says which side is the copy's source, so that the NUMA nodes come out in src/dst order.
"""
from __future__ import annotations

import re
from typing import Any, Dict

from probelib.fields import is_unavailable, unavailable

PCIE_PATHS = ("PIX", "PXB", "PHB", "NODE", "SYS")
NVLINK_LABEL = re.compile(r"^NV[0-9]+$")
LINK_KEYS = ("link_class", "link_kind", "nvlink_count", "nvlink_via", "pcie_path", "numa_node_src", "numa_node_dst", "same_numa")


def unknown_link(reason: str) -> Dict[str, Any]:
    """Every link field unavailable for the same reason."""
    value = unavailable(reason)
    return {key: value for key in LINK_KEYS}


def numa_node(value: Any) -> Any:
    """A NUMA node number, or why there is none (sysfs writes -1 where the platform does not say, e.g. in many VMs)."""
    if is_unavailable(value):
        return value
    if isinstance(value, int) and not isinstance(value, bool) and value >= 0:
        return value
    return unavailable("the platform gives no NUMA node for this GPU (numa_node is %r)" % (value,))


def pcie_path(entry: Dict[str, Any]) -> Any:
    """The PCIe common ancestor class (PIX .. SYS), from NVML, else from an nvidia-smi topo -m cell."""
    ancestor = entry.get("common_ancestor")
    if isinstance(ancestor, str):
        if ancestor in PCIE_PATHS:
            return ancestor
        return unavailable("NVML reports the PCIe common ancestor as %r, not one of %s" % (ancestor, "/".join(PCIE_PATHS)))
    label = entry.get("link_class")
    if isinstance(label, str) and label in PCIE_PATHS:
        return label
    if isinstance(label, str) and NVLINK_LABEL.match(label):
        return unavailable("nvidia-smi topo -m shows only the NVLink class (%s) for this pair, not its PCIe path" % label)
    if is_unavailable(ancestor):
        return ancestor
    return unavailable("the topology gives no PCIe path for this pair")


def link_class(entry: Dict[str, Any]) -> Any:
    label = entry.get("link_class")
    if isinstance(label, str) and (label in PCIE_PATHS or NVLINK_LABEL.match(label)):
        return label
    if is_unavailable(label):
        return label
    return unavailable("the topology classes this pair as %r, not NV<n> or one of %s" % (label, "/".join(PCIE_PATHS)))


def link_kind(nvlinks: Any, klass: Any, path: Any) -> Any:
    if isinstance(nvlinks, int) and not isinstance(nvlinks, bool):
        if nvlinks > 0:
            return "nvlink"
        if isinstance(path, str) or isinstance(klass, str):
            return "pcie"
    if isinstance(klass, str):
        return "nvlink" if NVLINK_LABEL.match(klass) else "pcie"
    return unavailable("neither the NVLink count nor the link class is known")


def nvlink_via(entry: Dict[str, Any], nvlinks: Any) -> Any:
    via = entry.get("nvlink_via")
    if via in ("direct", "nvswitch", "none"):
        return via
    if isinstance(nvlinks, int) and nvlinks == 0:
        return "none"
    if is_unavailable(via):
        return via
    return unavailable("the topology does not say how the NVLinks run")


def classify(entry: Any, src_is_a: bool) -> Dict[str, Any]:
    """The link fields of one ordered pair: link_class, link_kind, nvlink_count, nvlink_via, pcie_path, NUMA nodes."""
    if is_unavailable(entry):
        return unknown_link(entry["unavailable"])
    nvlinks = entry.get("nvlink_count")
    if not (is_unavailable(nvlinks) or (isinstance(nvlinks, int) and not isinstance(nvlinks, bool) and nvlinks >= 0)):
        nvlinks = unavailable("the topology gives the NVLink count as %r" % (nvlinks,))
    klass = link_class(entry)
    path = pcie_path(entry)
    node_a, node_b = numa_node(entry.get("numa_node_a")), numa_node(entry.get("numa_node_b"))
    src_node, dst_node = (node_a, node_b) if src_is_a else (node_b, node_a)
    if isinstance(src_node, int) and isinstance(dst_node, int):
        same: Any = src_node == dst_node
    else:
        same = src_node if is_unavailable(src_node) else dst_node
    return {
        "link_class": klass,
        "link_kind": link_kind(nvlinks, klass, path),
        "nvlink_count": nvlinks,
        "nvlink_via": nvlink_via(entry, nvlinks),
        "pcie_path": path,
        "numa_node_src": src_node,
        "numa_node_dst": dst_node,
        "same_numa": same,
    }
