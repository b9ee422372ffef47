"""Recorded /sys and /proc trees for the fabric probe, laid out and printed as the kernel does
(Documentation/ABI/stable/sysfs-class-infiniband, Documentation/ABI/testing/sysfs-class-net, drivers/infiniband/core/sysfs.c).

A PCI function is a real directory under sys/devices/pci<domain>:<bus>/<root port>/.../<address> with a config file,
sys/bus/pci/devices/<address> links to it, and its driver link points into sys/bus/pci/drivers/<driver>. An RDMA
device lives below its PCI function (<function>/infiniband/mlx5_0, with a device link back up) and
sys/class/infiniband/mlx5_0 links to it; a network interface lives in <function>/net/<name>, or in
sys/devices/virtual/net/<name> when it is virtual, and sys/class/net/<name> links to it. Values are written as the
kernel prints them: "4: ACTIVE", "5: LinkUp", "400 Gb/sec (4X NDR)", a LID in hex, GIDs as eight groups of four hex
digits, counters in decimal.
"""
import os
from dataclasses import dataclass, field
from typing import Dict, List, Optional

from probelib.system.roots import SystemRoots

NVIDIA, MELLANOX, INTEL, BROADCOM = "0x10de", "0x15b3", "0x8086", "0x1000"
H200, CONNECTX7, E810, PEX_SWITCH = "0x2335", "0x1021", "0x159b", "0xc030"
GPU_CLASS, IB_CLASS, ETHERNET_CLASS, BRIDGE_CLASS = "0x030200", "0x020700", "0x020000", "0x060400"
NDR = "400 Gb/sec (4X NDR)"
HDR = "200 Gb/sec (4X HDR)"
DOWN_RATE = "10 Gb/sec (4X SDR)"  # rate_show falls back to SDR when the port has no active speed
ZERO_GID = "0000:0000:0000:0000:0000:0000:0000:0000"
COUNTERS = ("symbol_error", "link_downed", "port_rcv_errors", "link_error_recovery", "port_xmit_discards",
            "port_rcv_remote_physical_errors", "local_link_integrity_errors", "excessive_buffer_overrun_errors",
            "port_xmit_constraint_errors", "port_rcv_constraint_errors", "VL15_dropped")
# One root port per GPU pair of an HGX H200 board, each above a PCIe switch whose downstream ports lead to one GPU and
# one ConnectX-7 each: (root port bus, NUMA node). GPU i and mlx5_i share a switch.
HGX_ROOTS = ((0x15, 0), (0x35, 0), (0x48, 0), (0x5a, 0), (0x97, 1), (0xb7, 1), (0xc9, 1), (0xdb, 1))


def write(path, text):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w", encoding="ascii") as handle:
        handle.write(text + "\n")


def link(target, name):
    """A relative symlink at name pointing to target, as sysfs makes them."""
    os.makedirs(os.path.dirname(name), exist_ok=True)
    os.symlink(os.path.relpath(target, os.path.dirname(name)), name)


@dataclass
class Port:
    state: str = "4: ACTIVE"
    phys_state: str = "5: LinkUp"
    rate: Optional[str] = NDR  # None: the kernel refuses the read (written here as a missing file)
    link_layer: str = "InfiniBand"
    lid: str = "0x1"
    gids: List[str] = field(default_factory=list)
    counters: Dict[str, int] = field(default_factory=dict)


@dataclass
class Nic:
    """A ConnectX function: its RDMA device and its network interface."""

    rdma_name: str
    netdev: str
    ports: List[Port]
    netdev_type: str = "32"  # ARPHRD_INFINIBAND: IPoIB; 1 for the Ethernet netdev of a RoCE port
    fw_ver: str = "28.39.1002"
    mtu: str = "4092"


class SysTree:
    """Builds a /sys and /proc under a folder."""

    def __init__(self, folder):
        self.sys = os.path.join(str(folder), "sys")
        self.proc = os.path.join(str(folder), "proc")
        os.makedirs(os.path.join(self.sys, "class", "net"))
        os.makedirs(os.path.join(self.sys, "module"))
        os.makedirs(self.proc)
        write(os.path.join(self.proc, "sys", "kernel", "osrelease"), "6.8.0-60-generic")
        write(os.path.join(self.proc, "modules"), "mlx5_ib 491520 0 - Live 0x0000000000000000\n"
              "mlx5_core 2453504 1 mlx5_ib, Live 0x0000000000000000")

    def roots(self):
        return SystemRoots(proc=self.proc, sys=self.sys)

    def function(self, parent, address, vendor, device, device_class, numa_node, driver=None):
        """A PCI function below parent (a directory, or None for a root port under its host bridge)."""
        if parent is None:
            parent = os.path.join(self.sys, "devices", "pci%s" % address[:7])
        directory = os.path.join(parent, address)
        for name, value in (("vendor", vendor), ("device", device), ("class", device_class), ("numa_node", str(numa_node))):
            write(os.path.join(directory, name), value)
        with open(os.path.join(directory, "config"), "wb") as handle:
            handle.write(bytes(64))
        link(directory, os.path.join(self.sys, "bus", "pci", "devices", address))
        if driver:
            drivers = os.path.join(self.sys, "bus", "pci", "drivers", driver)
            os.makedirs(drivers, exist_ok=True)
            link(drivers, os.path.join(directory, "driver"))
        return directory

    def bridge(self, parent, address, numa_node):
        return self.function(parent, address, BROADCOM, PEX_SWITCH, BRIDGE_CLASS, numa_node, "pcieport")

    def netdev(self, function_dir, name, *, operstate="up", carrier="1", speed="400000", mtu="9000", carrier_changes="2",
               netdev_type="1", devtype=None, extra_dirs=(), extra_files=None):
        """A network interface below function_dir (None: a virtual one, under devices/virtual/net)."""
        if function_dir is None:
            directory = os.path.join(self.sys, "devices", "virtual", "net", name)
        else:
            directory = os.path.join(function_dir, "net", name)
            link(function_dir, os.path.join(directory, "device"))
        ifindex = len(os.listdir(os.path.join(self.sys, "class", "net"))) + 2
        uevent = "INTERFACE=%s\nIFINDEX=%d%s" % (name, ifindex, "\nDEVTYPE=%s" % devtype if devtype else "")
        files = {"operstate": operstate, "carrier": carrier, "speed": speed, "mtu": mtu, "carrier_changes": carrier_changes,
                 "type": netdev_type, "uevent": uevent}
        files.update(extra_files or {})
        for file_name, value in files.items():
            if value is not None:
                write(os.path.join(directory, file_name), value)
        for extra in extra_dirs:
            os.makedirs(os.path.join(directory, extra))
        link(directory, os.path.join(self.sys, "class", "net", name))
        return directory

    def nic(self, function_dir, nic, guid):
        entry = os.path.join(function_dir, "infiniband", nic.rdma_name)
        for name, value in (("hca_type", "MT4129"), ("board_id", "MT_0000000838"), ("fw_ver", nic.fw_ver),
                            ("node_type", "1: CA"), ("node_guid", guid), ("sys_image_guid", guid)):
            write(os.path.join(entry, name), value)
        link(function_dir, os.path.join(entry, "device"))
        for number, port in enumerate(nic.ports, 1):
            self.port(os.path.join(entry, "ports", str(number)), port, guid)
        link(entry, os.path.join(self.sys, "class", "infiniband", nic.rdma_name))
        up = nic.ports[0].state == "4: ACTIVE"
        self.netdev(function_dir, nic.netdev, operstate="up" if up else "down", carrier="1" if up else "0",
                    speed="400000" if up else "-1", mtu=nic.mtu, netdev_type=nic.netdev_type)

    def port(self, directory, port, guid):
        files = {"state": port.state, "phys_state": port.phys_state, "rate": port.rate, "link_layer": port.link_layer,
                 "lid": port.lid, "sm_lid": "0x1", "lid_mask_count": "0", "cap_mask": "0xa751e84a"}
        for name, value in files.items():
            if value is not None:
                write(os.path.join(directory, name), value)
        gids = port.gids or ["fe80:0000:0000:0000:" + guid, ZERO_GID, ZERO_GID, ZERO_GID]
        for index, gid in enumerate(gids):
            write(os.path.join(directory, "gids", str(index)), gid)
        for name in COUNTERS:
            write(os.path.join(directory, "counters", name), str(port.counters.get(name, 0)))

    def nvidia_driver(self, open_module=True, peermem=False):
        os.makedirs(os.path.join(self.sys, "module", "nvidia"))
        write(os.path.join(self.sys, "module", "nvidia", "version"), "570.133.20")
        write(os.path.join(self.sys, "module", "nvidia", "taint"), "OE" if open_module else "POE")
        kind = "NVIDIA UNIX Open Kernel Module for x86_64" if open_module else "NVIDIA UNIX x86_64 Kernel Module"
        write(os.path.join(self.proc, "driver", "nvidia", "version"),
              "NVRM version: %s  570.133.20  Release Build  (dvs-builder@U16-I3-B03-4-3)  Wed Mar 19 11:36:09 UTC 2025\n"
              "GCC version:  gcc version 13.3.0 (Ubuntu 13.3.0-6ubuntu2~24.04)" % kind)
        if peermem:
            os.makedirs(os.path.join(self.sys, "module", "nvidia_peermem"))


def hgx_h200(folder, ports=None, fw_versions=None, peermem=True):
    """An 8-GPU HGX H200 node: GPU i and mlx5_i (ConnectX-7, one NDR port, IPoIB ibp<bus>s0) below one PCIe switch,
    two E810 Ethernet ports (ice) on a root port of NUMA node 0, docker0 (bridge), a veth, bond0 of the two E810
    ports, a VLAN on it and a TUN device. ports / fw_versions: {nic index: Port / firmware} overrides."""
    ports, fw_versions = ports or {}, fw_versions or {}
    tree = SysTree(folder)
    for index, (bus, node) in enumerate(HGX_ROOTS):
        root = tree.bridge(None, "0000:%02x:01.0" % bus, node)
        upstream = tree.bridge(root, "0000:%02x:00.0" % (bus + 1), node)
        to_gpu = tree.bridge(upstream, "0000:%02x:00.0" % (bus + 2), node)
        to_nic = tree.bridge(upstream, "0000:%02x:01.0" % (bus + 2), node)
        tree.function(to_gpu, "0000:%02x:00.0" % (bus + 3), NVIDIA, H200, GPU_CLASS, node, "nvidia")
        nic_bus = bus + 4
        function = tree.function(to_nic, "0000:%02x:00.0" % nic_bus, MELLANOX, CONNECTX7, IB_CLASS, node, "mlx5_core")
        nic = Nic("mlx5_%d" % index, "ibp%ds0" % nic_bus, [ports.get(index, Port(lid="0x%x" % (index + 10)))],
                  fw_ver=fw_versions.get(index, "28.39.1002"))
        tree.nic(function, nic, "b8ce:f603:00a1:%04x" % (0x2b30 + index))
    ethernet_root = tree.function(None, "0000:a0:01.1", "0x1022", "0x14ab", BRIDGE_CLASS, 0, "pcieport")
    for function_number, name in enumerate(("ens1f0np0", "ens1f1np1")):
        function = tree.function(ethernet_root, "0000:a1:00.%d" % function_number, INTEL, E810, ETHERNET_CLASS, 0, "ice")
        tree.netdev(function, name, speed="100000", mtu="1500", carrier_changes="4")
    tree.netdev(None, "lo", speed=None, mtu="65536", netdev_type="772", operstate="unknown")
    tree.netdev(None, "docker0", operstate="down", carrier="0", speed=None, mtu="1500", devtype="bridge", extra_dirs=("bridge",))
    tree.netdev(None, "veth1a2b3c", speed="10000", mtu="1500", carrier_changes="2")
    tree.netdev(None, "bond0", speed="200000", mtu="1500", devtype="bond", extra_dirs=("bonding",))
    tree.netdev(None, "bond0.100", speed="200000", mtu="1500", devtype="vlan")
    tree.netdev(None, "tun0", operstate="unknown", speed="10", mtu="1500", netdev_type="65534", extra_files={"tun_flags": "0x1001"})
    tree.nvidia_driver(open_module=True, peermem=peermem)
    return tree


def one_gpu_vm(folder):
    """The rig's 1-GPU VM: one H200 directly below a root port the hypervisor shows, no NUMA node, a virtio NIC, no
    /sys/class/infiniband, the proprietary kernel module and no nvidia_peermem."""
    tree = SysTree(folder)
    root = tree.function(None, "0000:00:02.0", "0x1b36", "0x000c", BRIDGE_CLASS, -1, "pcieport")
    tree.function(root, "0000:01:00.0", NVIDIA, H200, GPU_CLASS, -1, "nvidia")
    virtio = tree.function(None, "0000:00:03.0", "0x1af4", "0x1000", ETHERNET_CLASS, -1, "virtio-pci")
    virtio_device = os.path.join(virtio, "virtio2")
    os.makedirs(virtio_device)
    drivers = os.path.join(tree.sys, "bus", "virtio", "drivers", "virtio_net")
    os.makedirs(drivers)
    link(drivers, os.path.join(virtio_device, "driver"))
    tree.netdev(virtio_device, "eth0", speed="-1", mtu="1400")
    tree.nvidia_driver(open_module=False, peermem=False)
    return tree


def roce_host(folder):
    """One GPU and one ConnectX-7 whose port runs RoCE (link layer Ethernet, GIDs from the interface's addresses),
    below the same PCIe switch; its netdev is an Ethernet interface."""
    tree = SysTree(folder)
    root = tree.bridge(None, "0000:15:01.0", 0)
    upstream = tree.bridge(root, "0000:16:00.0", 0)
    to_gpu, to_nic = tree.bridge(upstream, "0000:17:00.0", 0), tree.bridge(upstream, "0000:17:01.0", 0)
    tree.function(to_gpu, "0000:18:00.0", NVIDIA, H200, GPU_CLASS, 0, "nvidia")
    function = tree.function(to_nic, "0000:19:00.0", MELLANOX, CONNECTX7, ETHERNET_CLASS, 0, "mlx5_core")
    gids = ["fe80:0000:0000:0000:bace:f6ff:fea1:2b30", "fe80:0000:0000:0000:bace:f6ff:fea1:2b30",
            "0000:0000:0000:0000:0000:ffff:0a00:0005", "0000:0000:0000:0000:0000:ffff:0a00:0005", ZERO_GID, ZERO_GID]
    port = Port(link_layer="Ethernet", lid="0x0", gids=gids)
    tree.nic(function, Nic("mlx5_0", "enp25s0np0", [port], netdev_type="1", mtu="9000"), "bace:f6ff:fea1:2b30")
    tree.nvidia_driver(open_module=True, peermem=False)
    return tree
