"""The link classes between the GPUs an all-reduce used, from the same NVML topology code as the health probe."""
from __future__ import annotations

from typing import Any, Dict, List, Mapping

from probelib.fields import is_unavailable, unavailable

# What a link class means, for the explanation.
PCIE_WORDS = {
    "PIX": "PCIe through one PCIe switch",
    "PXB": "PCIe through several PCIe switches",
    "PHB": "PCIe through the CPU's PCIe host bridge",
    "NODE": "PCIe across host bridges within one NUMA node",
    "SYS": "PCIe across NUMA nodes (the CPUs' interconnect)",
}


def describe_link_class(link_class: str, via: Any = None) -> str:
    """'NV18' -> 'NV18: NVLink through NVSwitch' (via nvswitch) or 'NV4: 4 direct NVLinks'; 'SYS' -> 'SYS: PCIe across ...'."""
    if link_class.startswith("NV") and link_class[2:].isdigit():
        if via == "nvswitch":
            return "%s: NVLink through NVSwitch" % link_class
        if via == "direct":
            return "%s: %s direct NVLink(s)" % (link_class, link_class[2:])
        return "%s: NVLink" % link_class
    words = PCIE_WORDS.get(link_class)
    return "%s: %s" % (link_class, words) if words else link_class


def select_pairs(topology: Mapping[str, Any], nvml_index_of: Mapping[int, int]) -> Dict[str, Any]:
    """Pairs of the used GPUs (torch index -> NVML index) with torch indices: {source, link_classes, pairs}."""
    torch_of = {nvml: torch_index for torch_index, nvml in nvml_index_of.items()}
    pairs: List[Dict[str, Any]] = []
    for pair in topology.get("pairs", []):
        a, b = pair.get("gpu_a"), pair.get("gpu_b")
        if a not in torch_of or b not in torch_of:
            continue
        first, second = sorted((torch_of[a], torch_of[b]))
        pairs.append({"gpu_a": first, "gpu_b": second, "link_class": pair.get("link_class"),
                      "nvlink_via": pair.get("nvlink_via", unavailable("not read"))})
    pairs.sort(key=lambda item: (item["gpu_a"], item["gpu_b"]))
    classes = sorted({pair["link_class"] for pair in pairs if isinstance(pair["link_class"], str)})
    return {"source": str(topology.get("method", "unknown")), "link_classes": classes, "pairs": pairs}


def nvml_indices_by_uuid(torch_uuids: Mapping[int, Any], nvml_uuids: List[Any]) -> Dict[int, int]:
    """torch index -> NVML index, matched by UUID (the two orders need not agree)."""
    mapping = {}
    for torch_index, uuid in torch_uuids.items():
        if isinstance(uuid, str) and uuid in nvml_uuids:
            mapping[torch_index] = nvml_uuids.index(uuid)
    return mapping


def gpu_links(devices: List[Dict[str, Any]]) -> Any:
    """{source, link_classes, pairs} for the GPUs in ``devices`` (measured_devices entries), or unavailable."""
    from probelib.nvml.access import NvmlSession  # pylint: disable=import-outside-toplevel
    from probelib.nvml.context import ReadContext  # pylint: disable=import-outside-toplevel
    from probelib.nvml.topology import collect_topology  # pylint: disable=import-outside-toplevel

    session = NvmlSession().open()
    try:
        if not session.usable:
            return unavailable("NVML is not usable: %s" % session.reason)
        nvml_uuids = [session.reader.value("nvmlDeviceGetUUID", handle) if handle is not None else None
                      for handle in session.handles]
        mapping = nvml_indices_by_uuid({device["index"]: device["uuid"] for device in devices}, nvml_uuids)
        if len(mapping) < len(devices):
            return unavailable("%d of %d GPUs could not be matched to NVML by UUID" % (len(devices) - len(mapping), len(devices)))
        topology = collect_topology(ReadContext(params={}, nvml=session))
        if is_unavailable(topology):
            return topology
        return select_pairs(topology, mapping)
    finally:
        session.close()


def nvlink_version_of(nvlinks: Any) -> Any:
    """The one NVLink version of a GPU's active links (read_nvlinks' answer), or why there is none."""
    if is_unavailable(nvlinks):
        return nvlinks
    versions = {entry.get("version") for entry in nvlinks.get("links", []) if entry.get("state") == "active"}
    if not versions:
        return unavailable("no active NVLink")
    if len(versions) > 1 or not all(isinstance(version, str) for version in versions):
        return unavailable("the active NVLinks report versions %s" % sorted(str(version) for version in versions))
    return versions.pop()


def gpu_link_rates(devices: List[Dict[str, Any]]) -> Any:
    """{torch index: {nvlink_version, pcie_max_gen, pcie_max_width}} from NVML, for the ring's link rate, or unavailable."""
    from probelib.nvml.access import NvmlSession  # pylint: disable=import-outside-toplevel
    from probelib.nvml.nvlink import read_nvlinks  # pylint: disable=import-outside-toplevel

    session = NvmlSession().open()
    try:
        if not session.usable:
            return unavailable("NVML is not usable: %s" % session.reason)
        reader = session.reader
        by_uuid = {reader.value("nvmlDeviceGetUUID", handle): handle for handle in session.handles if handle is not None}
        gpus = {}
        for device in devices:
            handle = by_uuid.get(device["uuid"])
            if handle is None:
                return unavailable("GPU %d could not be matched to NVML by UUID" % device["index"])
            gpus[device["index"]] = {
                "nvlink_version": nvlink_version_of(read_nvlinks(reader, handle)),
                "pcie_max_gen": reader.value("nvmlDeviceGetMaxPcieLinkGeneration", handle),
                "pcie_max_width": reader.value("nvmlDeviceGetMaxPcieLinkWidth", handle),
            }
        return gpus
    finally:
        session.close()
