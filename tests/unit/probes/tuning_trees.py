"""Fake /sys and /proc trees for the tuning probe, laid out as the kernel lays them out.

A PCI device is a real directory under sys/devices/pci<domain>:<bus>/<root port>/.../<device>, and
sys/bus/pci/devices/<address> is a relative symlink to it; its config file holds bytes built by config_space, with
the PCI Express capability and an ACS extended capability at chosen offsets.
"""
import os
import struct
from dataclasses import dataclass, field
from typing import Dict, List, Optional, Tuple

from probelib.system.roots import SystemRoots

NVIDIA = 0x10DE
RTX_PRO_6000 = 0x2BB5
GPU_CLASS = 0x030200
BRIDGE_CLASS = 0x060400
HOST_BRIDGE_CLASS = 0x060000
AMD = 0x1022
BROADCOM_SWITCH = (0x1000, 0xC030)
ACS_REQUEST_REDIRECT = 1 << 2
ACS_COMPLETION_REDIRECT = 1 << 3
ACS_SOURCE_VALIDATION = 1 << 0
ACS_UPSTREAM_FORWARDING = 1 << 4
SIZE_CODES = {128: 0, 256: 1, 512: 2, 1024: 3, 2048: 4, 4096: 5}
UNPRIVILEGED_BYTES = 64
KERNEL_SETTINGS = {
    "numa_balancing": "0", "nmi_watchdog": "0", "sched_autogroup_enabled": "0", "swappiness": "10",
    "dirty_ratio": "10", "dirty_background_ratio": "5", "rmem_max": "67108864", "wmem_max": "67108864",
}
CMDLINE = ("BOOT_IMAGE=/boot/vmlinuz-6.8.0-60-generic root=UUID=0f1e ro quiet splash processor.max_cstate=1 "
           "amd_pstate=active iommu=pt nmi_watchdog=0 mitigations=off secret_token=do-not-record -- init-arg")


def config_space(vendor_id, device_id, class_code, *, max_payload_supported_bytes=512, max_payload_bytes=256,
                 max_read_request_bytes=512, aspm_supported=3, aspm_control=0, acs_control=None, pcie_offset=0x70,
                 acs_offset=0x148, size=4096, bridge=False):
    """The config bytes of one PCI Express device: a power-management capability at 0x40 leading to the PCI Express
    capability at pcie_offset; in extended space AER at 0x100, leading to ACS at acs_offset when acs_control is not
    None. aspm_supported and aspm_control are the two-bit register fields."""
    data = bytearray(4096)
    struct.pack_into("<HH", data, 0x00, vendor_id, device_id)
    struct.pack_into("<H", data, 0x06, 0x0010)  # status: capability list
    struct.pack_into("<I", data, 0x08, class_code << 8)
    data[0x0E] = 0x01 if bridge else 0x00
    data[0x34] = 0x40
    data[0x40], data[0x41] = 0x01, pcie_offset
    data[pcie_offset], data[pcie_offset + 1] = 0x10, 0x00
    struct.pack_into("<I", data, pcie_offset + 0x04, SIZE_CODES[max_payload_supported_bytes])
    struct.pack_into("<H", data, pcie_offset + 0x08,
                     SIZE_CODES[max_payload_bytes] << 5 | SIZE_CODES[max_read_request_bytes] << 12)
    struct.pack_into("<I", data, pcie_offset + 0x0C, aspm_supported << 10)
    struct.pack_into("<H", data, pcie_offset + 0x10, aspm_control)
    struct.pack_into("<I", data, 0x100, extended_header(0x0001, acs_offset if acs_control is not None else 0))
    if acs_control is not None:
        struct.pack_into("<I", data, acs_offset, extended_header(0x000D, 0))
        struct.pack_into("<HH", data, acs_offset + 4, 0x007F, acs_control)
    return bytes(data[:size])


def extended_header(capability_id, next_offset, version=1):
    return capability_id | version << 16 | next_offset << 20


@dataclass
class FakeDevice:
    address: str
    vendor_id: int
    device_id: int
    class_code: int
    numa_node: int = 0
    link: Tuple[str, str, str, str] = ("32.0 GT/s PCIe", "16", "32.0 GT/s PCIe", "16")
    config: Dict[str, object] = field(default_factory=dict)
    children: List["FakeDevice"] = field(default_factory=list)


def write_device(sys_root, parent_dir, device, privileged):
    """The device's directory below parent_dir, its sysfs files, its bus symlink, then its children below it."""
    directory = os.path.join(parent_dir, device.address)
    os.makedirs(directory)
    files = {"vendor": "0x%04x" % device.vendor_id, "device": "0x%04x" % device.device_id,
             "class": "0x%06x" % device.class_code, "numa_node": str(device.numa_node)}
    for name, value in zip(("max_link_speed", "max_link_width", "current_link_speed", "current_link_width"),
                           device.link):
        if value is not None:
            files[name] = value
    for name, value in files.items():
        with open(os.path.join(directory, name), "w", encoding="ascii") as handle:
            handle.write(value + "\n")
    config = config_space(device.vendor_id, device.device_id, device.class_code,
                          bridge=device.class_code == BRIDGE_CLASS, **device.config)
    with open(os.path.join(directory, "config"), "wb") as handle:
        handle.write(config if privileged else config[:UNPRIVILEGED_BYTES])
    bus_dir = os.path.join(sys_root, "bus", "pci", "devices")
    os.makedirs(bus_dir, exist_ok=True)
    os.symlink(os.path.relpath(directory, bus_dir), os.path.join(bus_dir, device.address))
    for child in device.children:
        write_device(sys_root, directory, child, privileged)


def gpu(address, node, **config):
    settings = dict(max_payload_supported_bytes=512, max_payload_bytes=256, max_read_request_bytes=4096)
    settings.update(config)
    return FakeDevice(address, NVIDIA, RTX_PRO_6000, GPU_CLASS, node, config=settings)


def bridge(address, node, children, device_id=BROADCOM_SWITCH[1], vendor_id=BROADCOM_SWITCH[0], **config):
    settings = dict(max_payload_supported_bytes=512, max_payload_bytes=256, max_read_request_bytes=512,
                    acs_control=ACS_SOURCE_VALIDATION | ACS_UPSTREAM_FORWARDING)
    settings.update(config)
    return FakeDevice(address, vendor_id, device_id, BRIDGE_CLASS, node, config=settings, children=children)


# Two root ports per NUMA node, each above a switch with two downstream ports and a GPU below each.
ROOT_BUSES = ((0x10, 0), (0x30, 0), (0x90, 1), (0xB0, 1))


def rtx_pro_6000_hierarchy(downstream_config=None, gpu_config=None):
    """{host bridge directory name: root port FakeDevice}; downstream_config / gpu_config: {address: config} overrides."""
    downstream_config, gpu_config = downstream_config or {}, gpu_config or {}
    hierarchy = {}
    for bus, node in ROOT_BUSES:
        downstream_ports = []
        for slot, gpu_bus in ((0, bus + 3), (1, bus + 4)):
            gpu_address = "0000:%02x:00.0" % gpu_bus
            port_address = "0000:%02x:%02x.0" % (bus + 2, slot)
            downstream_ports.append(bridge(port_address, node, [gpu(gpu_address, node, **gpu_config.get(gpu_address, {}))],
                                           **downstream_config.get(port_address, {})))
        upstream_port = bridge("0000:%02x:00.0" % (bus + 1), node, downstream_ports)
        root_port = bridge("0000:%02x:01.0" % bus, node, [upstream_port], device_id=0x14AB, vendor_id=AMD,
                           max_read_request_bytes=4096)
        hierarchy["pci0000:%02x" % bus] = root_port
    return hierarchy


GPU_ADDRESSES = tuple("0000:%02x:00.0" % (bus + offset) for bus, unused_node in ROOT_BUSES for offset in (3, 4))


def write_kernel(proc_root, sys_root, cpus=8, settings=None, cmdline=CMDLINE):
    """The kernel side of the RTX PRO 6000 host: the operator's settings, acpi_idle with POLL and C1 on every CPU,
    amd-pstate-epp in active mode, four identity IOMMU groups."""
    values = dict(KERNEL_SETTINGS, **(settings or {}))
    for parts, key in ((("sys", "kernel", "numa_balancing"), "numa_balancing"),
                       (("sys", "kernel", "nmi_watchdog"), "nmi_watchdog"),
                       (("sys", "kernel", "sched_autogroup_enabled"), "sched_autogroup_enabled"),
                       (("sys", "vm", "swappiness"), "swappiness"), (("sys", "vm", "dirty_ratio"), "dirty_ratio"),
                       (("sys", "vm", "dirty_background_ratio"), "dirty_background_ratio"),
                       (("sys", "net", "core", "rmem_max"), "rmem_max"), (("sys", "net", "core", "wmem_max"), "wmem_max")):
        write_file(os.path.join(proc_root, *parts), values[key])
    write_file(os.path.join(proc_root, "cmdline"), cmdline)
    thp = os.path.join(sys_root, "kernel", "mm", "transparent_hugepage")
    write_file(os.path.join(thp, "enabled"), "always [madvise] never")
    write_file(os.path.join(thp, "defrag"), "always defer defer+madvise [madvise] never")
    write_file(os.path.join(sys_root, "module", "pcie_aspm", "parameters", "policy"),
               "[default] performance powersave powersupersave")
    write_file(os.path.join(sys_root, "module", "processor", "parameters", "max_cstate"), "1")
    cpu_root = os.path.join(sys_root, "devices", "system", "cpu")
    write_file(os.path.join(cpu_root, "cpuidle", "current_driver"), "acpi_idle")
    write_file(os.path.join(cpu_root, "cpuidle", "current_governor_ro"), "menu")
    write_file(os.path.join(cpu_root, "amd_pstate", "status"), "active")
    for cpu in range(cpus):
        for state, (name, latency) in enumerate((("POLL", "0"), ("C1", "1"))):
            state_dir = os.path.join(cpu_root, "cpu%d" % cpu, "cpuidle", "state%d" % state)
            write_file(os.path.join(state_dir, "name"), name)
            write_file(os.path.join(state_dir, "latency"), latency)
            write_file(os.path.join(state_dir, "disable"), "0")
        write_file(os.path.join(cpu_root, "cpu%d" % cpu, "cpufreq", "scaling_driver"), "amd-pstate-epp")
        write_file(os.path.join(cpu_root, "cpu%d" % cpu, "cpufreq", "scaling_governor"), "performance")
    for group in range(4):
        write_file(os.path.join(sys_root, "kernel", "iommu_groups", str(group), "type"), "identity")


def write_file(path, text):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w", encoding="ascii") as handle:
        handle.write(text + "\n")


def write_host(tmp_path, hierarchy, privileged=True, kernel=True):
    """SystemRoots of a host with the PCI hierarchy (an AMD host bridge and an NVMe drive beside it) and the kernel."""
    proc_root, sys_root = str(tmp_path / "proc"), str(tmp_path / "sys")
    os.makedirs(proc_root)
    devices = os.path.join(sys_root, "devices")
    host_bridge_device = FakeDevice("0000:00:00.0", AMD, 0x14A4, HOST_BRIDGE_CLASS, 0, link=(None, None, None, None))
    nvme_port = bridge("0000:00:01.1", 0, [FakeDevice("0000:01:00.0", 0x144D, 0xA80A, 0x010802, 0)],
                       device_id=0x14AB, vendor_id=AMD)
    write_device(sys_root, os.path.join(devices, "pci0000:00"), host_bridge_device, privileged)
    write_device(sys_root, os.path.join(devices, "pci0000:00"), nvme_port, privileged)
    for host_bridge, root_port in hierarchy.items():
        write_device(sys_root, os.path.join(devices, host_bridge), root_port, privileged)
    if kernel:
        write_kernel(proc_root, sys_root)
    return SystemRoots(proc=proc_root, sys=sys_root)


def rtx_pro_6000_two_numa(tmp_path, privileged=True):
    """8 RTX PRO 6000 (0x2bb5), GPUs 0-3 on NUMA node 0 and 4-7 on node 1, each behind a switch downstream port, the
    switch's upstream port and a root port; MaxReadReq 4096 on GPUs and root ports, MaxPayload 256 everywhere
    (the GPU supports 512), Gen5 x16 links, ACS on every bridge with no redirect bit. privileged=False: every config
    file holds the 64 bytes an unprivileged read returns."""
    return write_host(tmp_path, rtx_pro_6000_hierarchy(), privileged)


def downstream_ports():
    return ["0000:%02x:%02x.0" % (bus + 2, slot) for bus, unused_node in ROOT_BUSES for slot in (0, 1)]


def acs_on_switch_port(tmp_path, privileged=True):
    """As rtx_pro_6000_two_numa, with ACS P2P request and completion redirect set on every switch downstream port."""
    redirect = ACS_SOURCE_VALIDATION | ACS_REQUEST_REDIRECT | ACS_COMPLETION_REDIRECT | ACS_UPSTREAM_FORWARDING
    hierarchy = rtx_pro_6000_hierarchy(downstream_config={port: {"acs_control": redirect} for port in downstream_ports()})
    return write_host(tmp_path, hierarchy, privileged)


DOWNTRAINED_GPU = GPU_ADDRESSES[5]


def downtrained_link(tmp_path, privileged=True):
    """As rtx_pro_6000_two_numa, with GPU 5's link trained to 16 GT/s x8 of its 32 GT/s x16."""
    hierarchy = rtx_pro_6000_hierarchy()
    for root_port in hierarchy.values():
        for device in walk(root_port):
            if device.address == DOWNTRAINED_GPU:
                device.link = ("32.0 GT/s PCIe", "16", "16.0 GT/s PCIe", "8")
    return write_host(tmp_path, hierarchy, privileged)


def cpu_machine(tmp_path):
    """A host with no GPU: the host bridge and NVMe drive alone, and the kernel settings."""
    return write_host(tmp_path, {}, privileged=True)


def walk(device):
    yield device
    for child in device.children:
        yield from walk(child)


def device_dir(roots: SystemRoots, address: str) -> str:
    return os.path.realpath(os.path.join(roots.sys, "bus", "pci", "devices", address))


def rewrite_config(roots: SystemRoots, address: str, data: bytes) -> None:
    with open(os.path.join(device_dir(roots, address), "config"), "wb") as handle:
        handle.write(data)


def config_of(roots: SystemRoots, address: str) -> Optional[bytes]:
    with open(os.path.join(device_dir(roots, address), "config"), "rb") as handle:
        return handle.read()
