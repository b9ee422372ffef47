"""Every NVIDIA GPU on the PCI bus and every bridge on its way up to its root port, read from sysfs.

probelib.system.pci_path finds the bridges above each GPU from the device tree's real paths; the topmost is the root
port.
"""
from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import Any, Dict, List, Optional, Tuple

from probe_packages.tuning.pci_config import BECOME, UNPRIVILEGED_CONFIG_BYTES, ConfigRead, parse_config
from probe_packages.tuning.sysfs_values import lane_count, link_speed_gts, read_value
from probelib.fields import unavailable
from probelib.measure.host_gpus import GPU_CLASS_PREFIXES, NVIDIA_VENDOR
from probelib.system.pci_path import address_order, upstream_chain
from probelib.system.pci_place import numa_node_number
from probelib.system.sysfs import normalize_bus_id
from probelib.system.sysfs_field import nonempty_text

CONFIG_READ_LIMIT_BYTES = 4096
LINK_FILES = (
    ("max_speed_gts", "max_link_speed", link_speed_gts),
    ("max_width", "max_link_width", lane_count),
    ("speed_gts", "current_link_speed", link_speed_gts),
    ("width", "current_link_width", lane_count),
)
NO_LINK_FILE = "not a PCI Express device, or a kernel without link attributes"
NO_DEVICE_LISTED = "no device listed: the PCI bus has no NVIDIA GPU"


@dataclass
class PciTree:
    """devices: the rows of data.pci_devices; gpus: the rows of data.gpus; config_bytes_read: how many config bytes
    each device's read returned (None for a read that failed)."""

    devices: List[Dict[str, Any]] = field(default_factory=list)
    gpus: List[Dict[str, Any]] = field(default_factory=list)
    config_bytes_read: List[Optional[int]] = field(default_factory=list)


def read_pci_tree(sys_root: str, privileged: bool) -> PciTree:
    listing = os.path.join(sys_root, "bus", "pci", "devices")
    found: Dict[str, Tuple[str, str, Optional[str]]] = {}  # address -> (device directory, role, upstream)
    gpus = []
    for address in sorted(os.listdir(listing), key=address_order):
        if not _is_nvidia_gpu(os.path.join(listing, address)):
            continue
        chain = upstream_chain(os.path.realpath(os.path.join(listing, address)))
        gpu = normalize_bus_id(address)
        found[gpu] = (os.path.join(listing, address), "gpu", chain[0][0] if chain else None)
        for index, (bridge, directory) in enumerate(chain):
            upstream = chain[index + 1][0] if index + 1 < len(chain) else None
            found.setdefault(bridge, (directory, "bridge" if upstream else "root_port", upstream))
        gpus.append({"address": gpu, "path": [bridge for bridge, unused_directory in chain],
                     "root_port": chain[-1][0] if chain else None})
    tree = PciTree()
    for address in sorted(found, key=address_order):
        directory, role, upstream = found[address]
        device, bytes_read = read_device(address, directory, role, upstream, listing, privileged)
        tree.devices.append(device)
        tree.config_bytes_read.append(bytes_read)
    numa_of = {device["address"]: device["numa_node"] for device in tree.devices}
    gpus.sort(key=lambda gpu: address_order(gpu["address"]))
    tree.gpus = [dict(gpu, numa_node=numa_of[gpu["address"]]) for gpu in gpus]
    return tree


def _is_nvidia_gpu(directory: str) -> bool:
    vendor = read_value(os.path.join(directory, "vendor"), _identifier)
    device_class = read_value(os.path.join(directory, "class"), _identifier)
    return vendor == NVIDIA_VENDOR and isinstance(device_class, str) and device_class.startswith(GPU_CLASS_PREFIXES)


def _identifier(text: str) -> str:
    return nonempty_text(text).lower()


def read_device(address: str, directory: str, role: str, upstream: Optional[str], listing: str,
                privileged: bool) -> Tuple[Dict[str, Any], Optional[int]]:
    """One row of data.pci_devices and the number of config bytes read (None when the read failed)."""
    config_path = os.path.join(listing, address, "config")
    row: Dict[str, Any] = {
        "address": address,
        "role": role,
        "vendor_id": read_value(os.path.join(directory, "vendor"), _identifier),
        "device_id": read_value(os.path.join(directory, "device"), _identifier),
        "class": read_value(os.path.join(directory, "class"), _identifier),
        "numa_node": read_value(os.path.join(directory, "numa_node"), _numa_node, "a kernel without NUMA"),
        "upstream": upstream,
        "link": {name: read_value(os.path.join(directory, filename), parse, NO_LINK_FILE)
                 for name, filename, parse in LINK_FILES},
    }
    try:
        with open(os.path.join(directory, "config"), "rb") as handle:
            data = handle.read(CONFIG_READ_LIMIT_BYTES)
    except OSError as exc:
        reason = "%s could not be read: %s" % (config_path, exc.strerror or exc)
        row.update({"max_payload_supported_bytes": unavailable(reason), "max_payload_bytes": unavailable(reason),
                    "max_read_request_bytes": unavailable(reason),
                    "aspm": {"supported": unavailable(reason), "control": unavailable(reason)},
                    "acs": unavailable(reason)})
        return row, None
    row.update(parse_config(ConfigRead(data=data, path=config_path, privileged=privileged)))
    return row, len(data)


def _numa_node(text: str) -> int:
    return numa_node_number(text, "a VM, a single-node host, or firmware that gives none")


def config_space_section(tree: Any, privileged: bool) -> Dict[str, Any]:
    """data.config_space: whether the reads were privileged, the fewest bytes any read returned, and what that means."""
    if isinstance(tree, PciTree):
        counts = [count for count in tree.config_bytes_read if count is not None]
        if counts:
            bytes_read_min: Any = min(counts)
        elif tree.devices:
            bytes_read_min = unavailable("no device's config file could be read")
        else:
            bytes_read_min = unavailable(NO_DEVICE_LISTED)
    else:
        bytes_read_min = unavailable("the PCI devices were not read: %s" % tree["unavailable"])
    if privileged:
        note = ("read as root: the whole config space the kernel exposes (4096 bytes for a PCI Express device, 256 "
                "where the device or the platform offers no extended space)")
    else:
        note = ("an unprivileged read of /sys/bus/pci/devices/*/config returns the first %d bytes only; MaxPayload, "
                "MaxReadReq, ASPM and ACS need root: %s" % (UNPRIVILEGED_CONFIG_BYTES, BECOME))
    return {"privileged": privileged, "bytes_read_min": bytes_read_min, "note": note}
