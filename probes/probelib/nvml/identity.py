"""Which GPU an NVML index is (PCI bus id, NUMA node) and its NVLinks, read once per index and cached in the context:
the health probe's GPU section and the topology (health, p2p, collective) read the same answers."""
from __future__ import annotations

import os
from typing import Any, Dict, List

from probelib.fields import is_unavailable, read_field, unavailable
from probelib.nvml.access import NvmlReader
from probelib.nvml.context import ReadContext
from probelib.nvml.nvlink import read_nvlinks
from probelib.system.sysfs import normalize_bus_id, pci_device_dir, read_int, read_stripped


def gpu_identity(context: ReadContext, index: int) -> Dict[str, Any]:
    """Bus id and NUMA node of one GPU, cached because the topology needs them too."""
    def compute() -> Dict[str, Any]:
        reader = context.nvml.reader
        handle = context.nvml.handles[index]
        pci = reader.value("nvmlDeviceGetPciInfo", handle)
        bus_id = pci if is_unavailable(pci) else read_field(lambda: normalize_bus_id(_text(pci.busId)), "PCI bus id")
        return {"pci_info": pci, "bus_id": bus_id, "numa": read_numa(context, reader, handle, bus_id)}
    return context.cached("identity:%d" % index, compute)


def gpu_nvlinks(context: ReadContext, index: int) -> Any:
    return context.cached("nvlink:%d" % index,
                          lambda: read_nvlinks(context.nvml.reader, context.nvml.handles[index]))


def read_numa(context: ReadContext, reader: NvmlReader, handle: Any, bus_id: Any) -> Dict[str, Any]:
    numa: Dict[str, Any] = {"nvml_numa_node": reader.value("nvmlDeviceGetNumaNodeId", handle)}
    if is_unavailable(bus_id):
        numa["sysfs_numa_node"] = bus_id
        numa["local_cpulist"] = bus_id
        return numa
    directory = pci_device_dir(bus_id, context.roots.sys)
    numa["sysfs_numa_node"] = read_field(lambda: read_int(os.path.join(directory, "numa_node")),
                                         "%s/numa_node" % directory)
    numa["local_cpulist"] = read_field(lambda: read_stripped(os.path.join(directory, "local_cpulist")),
                                       "%s/local_cpulist" % directory)
    return numa


def nvml_bus_ids(context: ReadContext) -> List[Any]:
    """Bus id per NVML index, for sections that match kernel-log lines or links to GPUs."""
    if not context.nvml.usable:
        return []
    return [gpu_identity(context, index)["bus_id"] if handle is not None else unavailable("no handle")
            for index, handle in enumerate(context.nvml.handles)]


def _text(value: Any) -> str:
    return value.decode("ascii", "replace") if isinstance(value, bytes) else str(value)
