"""What the machine itself says about its shape, independent of the NVIDIA driver: every NVIDIA GPU on the PCI bus
(address, device id, the driver bound to it, its device minor, whether NVML lists it), the NVSwitches beside them,
and whether this is a virtual machine (the CPU's hypervisor flag, the DMI vendor and product).

The judge sets what a host should have from this evidence (plugin_utils/judge/machine_shape.py): a VM slice is
judged against the GPUs on its own bus, not against the SKU's whole board.
"""
from __future__ import annotations

import os
from typing import Any, Dict, List, Optional

from probelib.fields import is_unavailable, read_field, unavailable
from probelib.measure.host_gpus import NVIDIA_VENDOR, is_nvidia_gpu
from probelib.nvml.context import ReadContext
from probelib.nvml.identity import nvml_bus_ids
from probelib.system.roots import SystemRoots
from probelib.system.sysfs import normalize_bus_id, read_stripped, read_text
from probelib.system.sysfs_class import class_dir

NVSWITCH_CLASS_PREFIX = "0x0680"
DMI_FIELDS = ("sys_vendor", "product_name", "board_vendor", "board_name")


def collect_machine(context: ReadContext) -> Dict[str, Any]:
    return machine_evidence(context.roots, nvml_listing(context))


def machine_evidence(roots: SystemRoots, nvml: Any) -> Dict[str, Any]:
    """The machine section; nvml: {bus id: NVML index} of the GPUs NVML lists, or an unavailable field."""
    return {
        "pci_gpus": read_field(lambda: read_pci_gpus(roots.sys, roots.proc, nvml), "the PCI bus in /sys"),
        "pci_nvswitch_count": read_field(lambda: count_nvswitches(roots.sys), "the PCI bus in /sys"),
        "cpu_hypervisor_flag": read_field(lambda: read_hypervisor_flag(roots.proc), "/proc/cpuinfo flags"),
        "dmi": read_field(lambda: read_dmi(roots.sys), "/sys/class/dmi/id"),
    }


def nvml_listing(context: ReadContext) -> Any:
    """{normalized bus id: NVML index} of the GPUs NVML lists, or an unavailable field saying why NVML cannot tell."""
    if not context.nvml.usable:
        return unavailable("NVML is not usable, so whether it lists each GPU is unknown: %s" % context.nvml.reason)
    return {bus_id: index for index, bus_id in enumerate(nvml_bus_ids(context)) if isinstance(bus_id, str)}


def _pci_devices(sys_root: str) -> List[str]:
    devices = os.path.join(sys_root, "bus", "pci", "devices")
    return [os.path.join(devices, address) for address in sorted(os.listdir(devices))]


def read_pci_gpus(sys_root: str, proc_root: str, nvml: Any) -> List[Dict[str, Any]]:
    """Every NVIDIA VGA/3D controller on the PCI bus, in address order."""
    gpus = []
    for directory in _pci_devices(sys_root):
        if not is_nvidia_gpu(directory):
            continue
        address = normalize_bus_id(os.path.basename(directory))
        driver = bound_driver(directory)
        gpu: Dict[str, Any] = {
            "address": address,
            "device_id": read_field(lambda: read_stripped(os.path.join(directory, "device")).lower(), "%s/device" % directory),
            "class": read_field(lambda: read_stripped(os.path.join(directory, "class")).lower(), "%s/class" % directory),
            "driver": driver,
            "device_minor": device_minor(proc_root, address) if driver == "nvidia" else None,
        }
        if is_unavailable(nvml):
            gpu["nvml_index"], gpu["in_nvml"] = None, nvml
        else:
            gpu["nvml_index"], gpu["in_nvml"] = nvml.get(address), address in nvml
        gpus.append(gpu)
    return gpus


def bound_driver(device_dir: str) -> Optional[str]:
    """The kernel driver bound to a PCI device (the name its driver link points to), None when none is bound."""
    link = os.path.join(device_dir, "driver")
    if not os.path.islink(link):
        return None
    return os.path.basename(os.readlink(link))


def device_minor(proc_root: str, address: str) -> Any:
    """The GPU's /dev/nvidiaN minor from the NVIDIA module's /proc/driver/nvidia/gpus/<address>/information."""
    path = os.path.join(proc_root, "driver", "nvidia", "gpus", address, "information")
    try:
        text = read_text(path)
    except OSError as exc:
        return unavailable("%s could not be read: %s" % (path, exc.strerror or exc))
    for line in text.splitlines():
        key, separator, value = line.partition(":")
        if separator and key.strip() == "Device Minor":
            try:
                return int(value.strip())
            except ValueError:
                return unavailable("%s has a Device Minor that is not a number: %r" % (path, value.strip()[:40]))
    return unavailable("%s has no Device Minor line" % path)


def count_nvswitches(sys_root: str) -> int:
    count = 0
    for directory in _pci_devices(sys_root):
        try:
            vendor = read_stripped(os.path.join(directory, "vendor")).lower()
            device_class = read_stripped(os.path.join(directory, "class")).lower()
        except OSError:
            continue
        if vendor == NVIDIA_VENDOR and device_class.startswith(NVSWITCH_CLASS_PREFIX):
            count += 1
    return count


def read_hypervisor_flag(proc_root: str) -> bool:
    """Whether the CPU reports the hypervisor flag (set by every mainstream hypervisor for its guests; bare-metal
    cloud instances do not set it)."""
    for line in read_text(os.path.join(proc_root, "cpuinfo"), 8 << 20).splitlines():
        key, separator, value = line.partition(":")
        if separator and key.strip() == "flags":
            return "hypervisor" in value.split()
    raise ValueError("/proc/cpuinfo has no flags line (not an x86 CPU?)")


def read_dmi(sys_root: str) -> Dict[str, Any]:
    directory = os.path.join(class_dir(sys_root, "dmi"), "id")
    if not os.path.isdir(directory):
        return unavailable("%s does not exist (no DMI tables: a microVM such as Firecracker, or a non-x86 machine)" % directory)
    return {name: read_field(lambda name=name: read_stripped(os.path.join(directory, name)), "%s/%s" % (directory, name))
            for name in DMI_FIELDS}
