"""Network interfaces, from /sys/class/net (Documentation/ABI/testing/sysfs-class-net): every interface but lo.

operstate is RFC 2863's word as the kernel writes it; carrier is "1" or "0", and the kernel refuses the read (EINVAL)
while the interface is administratively down; speed is in Mb/s, -1 when the driver knows none (no link), and refused
for a device that is down or has no speed at all. carrier_changes counts each time the carrier came or went.
IPoIB is virtual (a protocol interface on the HCA, whose port state the RDMA section records) but keeps the PCI
address, NUMA node and driver of the function it sits on.
"""
from __future__ import annotations

import os
from typing import Any, Dict, List

from probe_packages.fabric.net_kind import DriverName, ethtool_driver, interface_kind
from probelib.fields import is_unavailable, unavailable
from probelib.system.pci_place import driver_of, pci_function_dir, pci_place
from probelib.system.sysfs_class import read_class
from probelib.system.sysfs_field import nonempty_text, read_value, whole_number

CARRIER_INVALID = "the interface is administratively down, and then the kernel says nothing of its carrier"
SPEED_INVALID = "the interface is down, or its driver reports no speed"


def read_interfaces(sys_root: str, rdma_of_netdev: Dict[str, str], driver_name: DriverName = ethtool_driver) -> List[Dict[str, Any]]:
    """One entry per /sys/class/net/<name> but lo, sorted by name; rdma_of_netdev: {interface: RDMA device}."""
    return read_class(sys_root, "net", lambda entry, name: read_interface(entry, name, rdma_of_netdev, driver_name),
                      leave_out=("lo",))


def read_interface(entry: str, name: str, rdma_of_netdev: Dict[str, str], driver_name: DriverName) -> Dict[str, Any]:
    kind = interface_kind(entry, driver_name)
    virtual = kind != "physical"
    interface: Dict[str, Any] = {
        "name": name,
        "operstate": read_value(os.path.join(entry, "operstate"), nonempty_text),
        "carrier": read_value(os.path.join(entry, "carrier"), carrier, invalid=CARRIER_INVALID),
        "speed_mbps": read_value(os.path.join(entry, "speed"), speed_mbps, invalid=SPEED_INVALID),
        "mtu": read_value(os.path.join(entry, "mtu"), whole_number),
        "carrier_changes": read_value(os.path.join(entry, "carrier_changes"), whole_number),
        "virtual": virtual,
        "kind": kind,
        "rdma_device": rdma_of_netdev.get(name),
    }
    if not os.path.exists(os.path.join(entry, "device")):
        named = driver_name(name)
        interface["driver"] = named if named else unavailable(
            "a virtual interface has no device/driver link, and ETHTOOL_GDRVINFO named no driver for %s" % name)
        interface.update({"pci_address": None, "numa_node": None, "pcie_path": None})
    else:
        interface["driver"] = driver_of(entry)
        interface.update(pci_place(pci_function_dir(entry)))
        if is_unavailable(interface["pci_address"]):
            interface.update({"pci_address": None, "numa_node": None, "pcie_path": None})
    return interface


def carrier(text: str) -> bool:
    if text not in ("0", "1"):
        raise ValueError("not 0 or 1")
    return text == "1"


def speed_mbps(text: str) -> int:
    speed = whole_number(text)
    if speed < 0:
        raise ValueError("the driver knows no speed (-1: no link, or a device that has none)")
    return speed


def rdma_netdevs(rdma_devices: List[Dict[str, Any]]) -> Dict[str, str]:
    """{interface name: the RDMA device whose PCI function carries it} from each device's netdevs."""
    return {netdev: device["name"] for device in rdma_devices for netdev in device.get("netdevs", [])}
