"""Every unordered GPU pair: PCIe common ancestor, NVLinks between them, P2P status, NUMA nodes."""
from __future__ import annotations

from typing import Any, Callable, Dict, Optional

from probelib.fields import is_unavailable, unavailable
from probelib.nvml.context import ReadContext
from probelib.nvml.identity import gpu_identity, gpu_nvlinks
from probelib.nvml.smi_topology import parse_topo_matrix, run_nvidia_smi_topo

# nvml.h nvmlGpuTopologyLevel_t -> the labels of `nvidia-smi topo -m`.
TOPOLOGY_LEVELS = {0: "internal", 10: "PIX", 20: "PXB", 30: "PHB", 40: "NODE", 50: "SYS"}
# nvml.h nvmlGpuP2PCapsIndex_t
P2P_CAPS = (("read", 0), ("write", 1), ("nvlink", 2), ("atomics", 3))
P2P_STATUSES = {0: "ok", 1: "chipset_not_supported", 2: "gpu_not_supported", 3: "ioh_topology_not_supported",
                4: "disabled_by_regkey", 5: "not_supported", 6: "unknown"}
METHOD_NVML = "nvml"
METHOD_SMI = "nvidia-smi topo -m"


def topology_level_name(level: int) -> str:
    return TOPOLOGY_LEVELS.get(level, "unknown(%d)" % level)


def p2p_status_name(status: int) -> str:
    return P2P_STATUSES.get(status, "unknown(%d)" % status)


def link_class(nvlink_count: Any, pcie_class: Any) -> Any:
    """'NV<n>' when NVLinks join the pair, else the PCIe class, like nvidia-smi topo -m."""
    if isinstance(nvlink_count, int) and nvlink_count > 0:
        return "NV%d" % nvlink_count
    return pcie_class


def count_nvlinks_between(links_a: Any, links_b: Any, bus_id_a: Any, bus_id_b: Any) -> Dict[str, Any]:
    """NVLinks joining two GPUs: direct GPU-to-GPU links, or through NVSwitches (as nvidia-smi counts them)."""
    if is_unavailable(links_a) or is_unavailable(links_b):
        reason = links_a if is_unavailable(links_a) else links_b
        return {"count": reason, "via": reason}
    direct = sum(1 for link in links_a["links"]
                 if link["state"] == "active" and link.get("remote_pci_bus_id") == bus_id_b)
    if direct == 0:
        direct = sum(1 for link in links_b["links"]
                     if link["state"] == "active" and link.get("remote_pci_bus_id") == bus_id_a)
    if direct:
        return {"count": direct, "via": "direct"}
    to_switch_a = _active_to_switch(links_a)
    to_switch_b = _active_to_switch(links_b)
    if to_switch_a and to_switch_b:
        return {"count": min(to_switch_a, to_switch_b), "via": "nvswitch"}
    return {"count": 0, "via": "none"}


def _active_to_switch(links: Dict[str, Any]) -> int:
    return sum(1 for link in links["links"]
               if link["state"] == "active" and link.get("remote_device_type") == "switch")


def collect_topology(context: ReadContext,
                     smi_runner: Callable[[], str] = run_nvidia_smi_topo) -> Any:
    nvml = context.nvml
    if nvml.usable:
        pairs = [_nvml_pair(context, a, b) for a in range(len(nvml.handles)) for b in range(a + 1, len(nvml.handles))]
    else:
        pairs = []
    nvml_failed = [pair for pair in pairs if is_unavailable(pair["common_ancestor"])]
    if nvml.usable and not nvml_failed:
        return {"method": METHOD_NVML, "gpu_count": len(nvml.handles), "pairs": pairs}
    try:
        smi = parse_topo_matrix(smi_runner())
    except Exception as exc:
        if nvml.usable:
            return {"method": METHOD_NVML, "gpu_count": len(nvml.handles), "pairs": pairs,
                    "fallback_error": "%s: %s" % (type(exc).__name__, exc)}
        return unavailable("%s; the nvidia-smi topo -m fallback failed too: %s: %s" % (
            nvml.reason, type(exc).__name__, exc))
    if not pairs:
        gpu_count = len(smi["gpus"])
        pairs = [_smi_pair(a, b, smi) for a in range(gpu_count) for b in range(a + 1, gpu_count)]
        return {"method": METHOD_SMI, "gpu_count": gpu_count, "pairs": pairs}
    for pair in nvml_failed:
        label = smi["pairs"].get((pair["gpu_a"], pair["gpu_b"]))
        if label is not None:
            pair["link_class"] = label
            pair["method"] = METHOD_SMI
    return {"method": "%s+%s" % (METHOD_NVML, METHOD_SMI), "gpu_count": len(nvml.handles), "pairs": pairs}


def _nvml_pair(context: ReadContext, a: int, b: int) -> Dict[str, Any]:
    nvml = context.nvml
    reader = nvml.reader
    handle_a, handle_b = nvml.handles[a], nvml.handles[b]
    if handle_a is None or handle_b is None:
        reason = unavailable("no NVML handle for GPU %d" % (a if handle_a is None else b))
        return {"gpu_a": a, "gpu_b": b, "method": METHOD_NVML, "common_ancestor": reason, "nvlink_count": reason,
                "nvlink_via": reason, "p2p": reason, "numa_node_a": reason, "numa_node_b": reason,
                "link_class": reason}
    identity_a, identity_b = gpu_identity(context, a), gpu_identity(context, b)
    ancestor = reader.value("nvmlDeviceGetTopologyCommonAncestor", handle_a, handle_b, convert=topology_level_name)
    nvlinks = count_nvlinks_between(gpu_nvlinks(context, a), gpu_nvlinks(context, b),
                                    identity_a["bus_id"], identity_b["bus_id"])
    p2p = {name: reader.value("nvmlDeviceGetP2PStatus", handle_a, handle_b, index, convert=p2p_status_name)
           for name, index in P2P_CAPS}
    return {
        "gpu_a": a,
        "gpu_b": b,
        "method": METHOD_NVML,
        "common_ancestor": ancestor,
        "nvlink_count": nvlinks["count"],
        "nvlink_via": nvlinks["via"],
        "p2p": p2p,
        "numa_node_a": identity_a["numa"]["sysfs_numa_node"],
        "numa_node_b": identity_b["numa"]["sysfs_numa_node"],
        "link_class": link_class(nvlinks["count"], ancestor),
    }


def _smi_pair(a: int, b: int, smi: Dict[str, Any]) -> Dict[str, Any]:
    reason = unavailable("NVML is not usable; only nvidia-smi topo -m was read")
    label = smi["pairs"].get((a, b))
    return {
        "gpu_a": a, "gpu_b": b, "method": METHOD_SMI,
        "common_ancestor": reason, "nvlink_count": _nvlinks_from_label(label), "nvlink_via": reason,
        "p2p": reason,
        "numa_node_a": _smi_numa(smi, a), "numa_node_b": _smi_numa(smi, b),
        "link_class": label if label else unavailable("nvidia-smi topo -m has no cell for this pair"),
    }


def _nvlinks_from_label(label: Optional[str]) -> Any:
    if label and label.startswith("NV") and label[2:].isdigit():
        return int(label[2:])
    if label:
        return 0
    return unavailable("nvidia-smi topo -m has no cell for this pair")


def _smi_numa(smi: Dict[str, Any], index: int) -> Any:
    for gpu in smi["gpus"]:
        if gpu["index"] == index:
            value = gpu.get("numa_affinity", "")
            return int(value) if value.isdigit() else unavailable("nvidia-smi gives NUMA affinity %r" % value)
    return unavailable("GPU%d is not a row of nvidia-smi topo -m" % index)
