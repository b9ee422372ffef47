"""NUMA locality of a GPU: its PCI bus id, the node and CPUs sysfs names for it, and pinning the copying thread there."""
from __future__ import annotations

import contextlib
import os
from typing import Any, Dict, Iterator, List, Optional, Sequence, Set, Tuple

from probelib.fields import is_unavailable, read_field, unavailable
from probelib.system.sysfs import normalize_bus_id, parse_cpulist, pci_device_dir, read_int, read_stripped

NO_NUMA_NOTE = "no NUMA affinity information (VM?): sysfs numa_node is -1, the copies ran on every allowed CPU"


def cpus_of(cpulist: str) -> List[int]:
    """'0-15,32-47' -> [0, ..., 15, 32, ..., 47], sorted, without duplicates."""
    cpus = parse_cpulist(cpulist)
    for cpu in cpus:
        if cpu < 0:
            raise ValueError("negative CPU in %r" % cpulist)
    return sorted(set(cpus))


def format_cpulist(cpus: Sequence[int]) -> str:
    """[0, 1, 2, 3, 8, 10, 11] -> '0-3,8,10-11' (the kernel's own notation)."""
    ordered = sorted(set(cpus))
    parts: List[str] = []
    index = 0
    while index < len(ordered):
        first = last = ordered[index]
        while index + 1 < len(ordered) and ordered[index + 1] == last + 1:
            index += 1
            last = ordered[index]
        parts.append(str(first) if first == last else "%d-%d" % (first, last))
        index += 1
    return ",".join(parts)


def bus_id_from_torch(domain: Any, bus: Any, device: Any) -> str:
    """torch's pci_domain_id / pci_bus_id / pci_device_id -> '0000:18:00.0' (a GPU is function 0)."""
    return "%04x:%02x:%02x.0" % (int(domain), int(bus), int(device))


def choose_cpus(numa_node: Any, local_cpulist: Any, allowed: Set[int]) -> Tuple[Optional[List[int]], str]:
    """The CPUs to pin to (None: do not pin) and a sentence saying what was decided and why."""
    if is_unavailable(numa_node):
        return None, "not pinned: the GPU's NUMA node is unknown (%s)" % numa_node["unavailable"]
    if numa_node < 0:
        return None, NO_NUMA_NOTE
    if is_unavailable(local_cpulist):
        return None, "not pinned: local_cpulist is unknown (%s)" % local_cpulist["unavailable"]
    try:
        local = cpus_of(local_cpulist)
    except ValueError as exc:
        return None, "not pinned: local_cpulist %r could not be read: %s" % (local_cpulist, exc)
    usable = sorted(set(local) & set(allowed))
    if not usable:
        return None, ("not pinned: none of NUMA node %d's CPUs (%s) is allowed to this process (allowed: %s)"
                      % (numa_node, format_cpulist(local), format_cpulist(sorted(allowed))))
    if len(usable) < len(local):
        return usable, ("pinned to %d of NUMA node %d's %d CPUs (%s; the others are not allowed to this process)"
                        % (len(usable), numa_node, len(local), format_cpulist(usable)))
    return usable, "pinned to NUMA node %d's %d CPUs (%s)" % (numa_node, len(usable), format_cpulist(usable))


def gpu_bus_id(torch: Any, device: Dict[str, Any], snapshots: Any) -> Tuple[Any, str]:
    """(bus id or unavailable, source): NVML through the snapshot session first, then torch's properties."""
    reasons = []
    if snapshots is not None and snapshots.session.usable:
        handle = snapshots.by_uuid.get(device["uuid"]) if isinstance(device["uuid"], str) else None
        if handle is not None:
            ok, pci = snapshots.session.reader.attempt("nvmlDeviceGetPciInfo", handle)
            if ok:
                text = getattr(pci, "busId", b"") or getattr(pci, "busIdLegacy", b"")
                text = text.decode("ascii", "replace") if isinstance(text, bytes) else str(text)
                try:
                    return normalize_bus_id(text), "nvml"
                except ValueError as exc:
                    reasons.append("NVML: %s" % exc)
            else:
                reasons.append("NVML: %s" % pci)
        else:
            reasons.append("NVML: no device with UUID %r" % (device["uuid"],))
    elif snapshots is not None:
        reasons.append("NVML: %s" % (snapshots.session.reason or "not usable"))
    properties = torch.cuda.get_device_properties(device["index"])
    parts = [getattr(properties, name, None) for name in ("pci_domain_id", "pci_bus_id", "pci_device_id")]
    if all(part is not None for part in parts):
        return bus_id_from_torch(*parts), "torch"
    reasons.append("torch %s has no pci_bus_id in its device properties" % getattr(torch, "__version__", "?"))
    return unavailable("; ".join(reasons)), "none"


def read_locality(bus_id: Any, sys_root: str = "/sys") -> Dict[str, Any]:
    """{numa_node, local_cpulist} from /sys/bus/pci/devices/<bdf>/."""
    if is_unavailable(bus_id):
        return {"numa_node": bus_id, "local_cpulist": bus_id}
    directory = pci_device_dir(bus_id, sys_root)
    return {
        "numa_node": read_field(lambda: read_int(os.path.join(directory, "numa_node")), "%s/numa_node" % directory),
        "local_cpulist": read_field(lambda: read_stripped(os.path.join(directory, "local_cpulist")),
                                    "%s/local_cpulist" % directory),
    }


def allowed_cpus() -> Set[int]:
    return set(os.sched_getaffinity(0))


@contextlib.contextmanager
def pinned_thread(cpus: Optional[List[int]]) -> Iterator[Dict[str, Any]]:
    """Pin the calling thread to ``cpus`` (None: leave it) and restore its affinity afterwards.

    Yields {pinned: bool, error: str or None}; a failing sched_setaffinity is reported, not raised.
    """
    original = os.sched_getaffinity(0)
    outcome: Dict[str, Any] = {"pinned": False, "error": None}
    if cpus:
        try:
            os.sched_setaffinity(0, cpus)
            outcome["pinned"] = True
        except OSError as exc:
            outcome["error"] = "sched_setaffinity(%s) failed: %s" % (format_cpulist(cpus), exc.strerror or exc)
    try:
        yield outcome
    finally:
        if outcome["pinned"]:
            os.sched_setaffinity(0, original)
