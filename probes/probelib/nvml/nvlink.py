"""NVLink links of one GPU: state, version, what is at the other end."""
from __future__ import annotations

from typing import Any, Dict, List

from probelib.fields import is_unavailable, unavailable
from probelib.nvml.access import (NVML_ERROR_INVALID_ARGUMENT, NVML_ERROR_NOT_SUPPORTED, NvmlReader,
                                  failure_reason, nvml_error_code)
from probelib.system.sysfs import normalize_bus_id

NVLINK_MAX_LINKS_FALLBACK = 18
REMOTE_DEVICE_TYPES = {0: "gpu", 1: "ibm_npu", 2: "switch", 0xFF: "unknown"}
# nvml.h nvmlNvlinkVersion_t: the value NVML returns is this enum, not the NVLink generation itself.
NVLINK_VERSION_NAMES = {1: "1.0", 2: "2.0", 3: "2.2", 4: "3.0", 5: "3.1", 6: "4.0", 7: "5.0", 8: "6.0"}


def max_links(module: Any) -> int:
    value = getattr(module, "NVML_NVLINK_MAX_LINKS", NVLINK_MAX_LINKS_FALLBACK)
    return value if isinstance(value, int) and value > 0 else NVLINK_MAX_LINKS_FALLBACK


def read_nvlinks(reader: NvmlReader, handle: Any) -> Any:
    """Every link index up to NVML_NVLINK_MAX_LINKS (links_queried). not_supported_count counts those NVML answered
    Not Supported or Invalid Argument for, which are not listed in links: all of them on a GPU (or VM slice) without
    NVLink, the indices past the GPU's own links otherwise (nvidia-ml-py 13.610 asks 36 of an 18-link H200)."""
    links: List[Dict[str, Any]] = []
    not_supported = 0
    first_failure = None
    queried = max_links(reader.module)
    for link in range(queried):
        ok, state = reader.attempt("nvmlDeviceGetNvLinkState", handle, link)
        if not ok:
            if nvml_error_code(state) in (NVML_ERROR_NOT_SUPPORTED, NVML_ERROR_INVALID_ARGUMENT):
                not_supported += 1
            elif first_failure is None:
                first_failure = failure_reason(state)
            continue
        links.append(describe_link(reader, handle, link, bool(state)))
    if not links and first_failure is not None:
        return unavailable(first_failure)
    return {
        "links": links,
        "supported_count": len(links),
        "active_count": sum(1 for entry in links if entry["state"] == "active"),
        "not_supported_count": not_supported,
        "links_queried": queried,
    }


def describe_link(reader: NvmlReader, handle: Any, link: int, active: bool) -> Dict[str, Any]:
    entry: Dict[str, Any] = {"link": link, "state": "active" if active else "inactive"}
    version_code = reader.value("nvmlDeviceGetNvLinkVersion", handle, link)
    entry["version_code"] = version_code
    entry["version"] = (NVLINK_VERSION_NAMES.get(version_code, "unknown(%d)" % version_code)
                        if isinstance(version_code, int) else version_code)
    if not active:
        reason = unavailable("link is inactive")
        entry.update(remote_pci_bus_id=reason, remote_device_type=reason)
        return entry
    remote = reader.value("nvmlDeviceGetNvLinkRemotePciInfo", handle, link)
    entry["remote_pci_bus_id"] = remote if is_unavailable(remote) else _bus_id_of(remote)
    remote_type = reader.value("nvmlDeviceGetNvLinkRemoteDeviceType", handle, link)
    entry["remote_device_type"] = (REMOTE_DEVICE_TYPES.get(remote_type, "unknown(%d)" % remote_type)
                                   if isinstance(remote_type, int) else remote_type)
    return entry


def _bus_id_of(pci_info: Any) -> Any:
    bus_id = getattr(pci_info, "busId", "") or getattr(pci_info, "busIdLegacy", "")
    if isinstance(bus_id, bytes):
        bus_id = bus_id.decode("ascii", "replace")
    try:
        return normalize_bus_id(bus_id)
    except ValueError:
        return unavailable("NVML gave an unreadable remote PCI bus id %r" % bus_id)
