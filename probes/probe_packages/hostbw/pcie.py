"""The GPU's PCIe link (through NVML) and its raw rate per direction, the ceiling a host copy is compared with."""
from __future__ import annotations

from typing import Any, Dict, Optional

from probelib.fields import is_unavailable, unavailable
from probelib.system.pcie_rate import link_raw_gbps


def read_link(snapshots: Any, uuid: Any, when: str) -> Dict[str, Any]:
    """{max_link_gen, max_link_width, link_raw_gbps} or with when="current" the link's state right now."""
    reason = _no_handle(snapshots, uuid)
    if reason is not None:
        return unavailable(reason)
    handle = snapshots.by_uuid[uuid]
    reader = snapshots.session.reader
    if when == "max":
        generation = reader.value("nvmlDeviceGetMaxPcieLinkGeneration", handle)
        width = reader.value("nvmlDeviceGetMaxPcieLinkWidth", handle)
        return {"max_link_gen": generation, "max_link_width": width, "link_raw_gbps": link_raw_gbps(generation, width)}
    return {"link_gen": reader.value("nvmlDeviceGetCurrPcieLinkGeneration", handle),
            "link_width": reader.value("nvmlDeviceGetCurrPcieLinkWidth", handle)}


def _no_handle(snapshots: Any, uuid: Any) -> Optional[str]:
    if snapshots is None:
        return "NVML was not opened"
    if not snapshots.session.usable:
        return snapshots.session.reason or "NVML is not usable"
    if not isinstance(uuid, str) or uuid not in snapshots.by_uuid:
        return "no NVML device has the UUID %r that torch reported" % (uuid,)
    return None


def percent_of_link(result: Dict[str, Any], raw_gbps: Any) -> Any:
    """The result's median as % of the link's raw rate; bidirectional is compared with both directions (2 x raw)."""
    if is_unavailable(raw_gbps):
        return unavailable("no link rate to compare with: %s" % raw_gbps["unavailable"])
    if not isinstance(raw_gbps, (int, float)) or raw_gbps <= 0:
        return unavailable("link rate %r is not a positive number" % (raw_gbps,))
    ceiling = 2 * raw_gbps if result["direction"] == "bidirectional" else raw_gbps
    return round(result["median_gbps"] / ceiling * 100.0, 1)
