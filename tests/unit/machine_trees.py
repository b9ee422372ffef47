"""Fake /sys and /proc trees of a machine's PCI bus, as the health probe's machine section reads them (address, device
id, class, the driver link, the NVIDIA module's device minor, the CPU's hypervisor flag, DMI), for the probe's tests and
the judge's machine-shape scenarios."""
import os
import sys

PROBES_DIR = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", "probes"))
if PROBES_DIR not in sys.path:
    sys.path.insert(0, PROBES_DIR)

from probe_packages.health.machine import machine_evidence  # noqa: E402  pylint: disable=wrong-import-position
from probelib.system.roots import SystemRoots  # noqa: E402  pylint: disable=wrong-import-position

H200_DEVICE = "0x2335"
GPU_CLASS = "0x030200"
NVSWITCH_CLASS = "0x068000"
HGX_ADDRESSES = ("0000:18:00.0", "0000:2a:00.0", "0000:3a:00.0", "0000:5d:00.0",
                 "0000:9a:00.0", "0000:ab:00.0", "0000:ba:00.0", "0000:db:00.0")


def _pci_device(sys_root, address, vendor, device, device_class, driver=None):
    directory = os.path.join(sys_root, "devices", "pci0000:00", address)
    os.makedirs(directory)
    for name, value in (("vendor", vendor), ("device", device), ("class", device_class)):
        with open(os.path.join(directory, name), "w", encoding="ascii") as handle:
            handle.write(value + "\n")
    if driver:
        driver_dir = os.path.join(sys_root, "bus", "pci", "drivers", driver)
        os.makedirs(driver_dir, exist_ok=True)
        os.symlink(os.path.relpath(driver_dir, directory), os.path.join(directory, "driver"))
    listing = os.path.join(sys_root, "bus", "pci", "devices")
    os.makedirs(listing, exist_ok=True)
    os.symlink(os.path.relpath(directory, listing), os.path.join(listing, address))


def machine_tree(root, gpus, nvswitches=0, hypervisor=False, dmi=None):
    """SystemRoots of a machine. gpus: [(address, driver or None, device minor or None)]; dmi: {file: text} or None
    for a machine without DMI tables."""
    sys_root, proc_root = os.path.join(str(root), "sys"), os.path.join(str(root), "proc")
    os.makedirs(proc_root)
    _pci_device(sys_root, "0000:00:00.0", "0x8086", "0x09a2", "0x060000")
    for number in range(nvswitches):
        _pci_device(sys_root, "0000:%02x:00.0" % (0xc0 + number), "0x10de", "0x22a3", NVSWITCH_CLASS, "nvidia-nvswitch")
    for address, driver, minor in gpus:
        _pci_device(sys_root, address, "0x10de", H200_DEVICE, GPU_CLASS, driver)
        if minor is not None:
            info = os.path.join(proc_root, "driver", "nvidia", "gpus", address)
            os.makedirs(info)
            with open(os.path.join(info, "information"), "w", encoding="ascii") as handle:
                handle.write("Model: \t\t NVIDIA H200\nIRQ:   \t\t 42\nDevice Minor: \t %d\nBus Location: \t %s\n" % (minor, address))
    with open(os.path.join(proc_root, "cpuinfo"), "w", encoding="ascii") as handle:
        handle.write("processor\t: 0\nflags\t\t: fpu vme de pse tsc msr pae%s sse sse2\n\n" % (" hypervisor" if hypervisor else ""))
    if dmi is not None:
        dmi_dir = os.path.join(sys_root, "class", "dmi", "id")
        os.makedirs(dmi_dir)
        for name in ("sys_vendor", "product_name", "board_vendor", "board_name"):
            with open(os.path.join(dmi_dir, name), "w", encoding="ascii") as handle:
                handle.write(dmi.get(name, "") + "\n")
    return SystemRoots(proc=proc_root, sys=sys_root, root=str(root))


def machine_section(root, gpus, nvml, **tree):
    """The health data's machine section read from a fake tree; nvml: {address: NVML index} of the GPUs NVML lists
    (or an unavailable field when NVML cannot say)."""
    return machine_evidence(machine_tree(root, gpus, **tree), nvml)
