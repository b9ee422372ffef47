"""How many NVIDIA GPUs the host has, whatever CUDA sees: NVML, the kernel module's /proc entries, the PCI bus.

CUDA_VISIBLE_DEVICES, a CPU build of torch or a broken CUDA install change what torch sees, never what is in the
machine; the measurement probes hold one against the other so that they never measure the CPU on a GPU host.
Standard library only (nvidia-ml-py where it imports).
"""
from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Any, Callable, List, Optional, Tuple

from probelib.nvml.access import NvmlSession, missing_kernel_module

NVIDIA_VENDOR = "0x10de"
# VGA and 3D controllers; an NVSwitch is a bridge (0x0680) and no GPU.
GPU_CLASS_PREFIXES = ("0x0300", "0x0302")
SOURCES = ("nvml", "proc", "pci")


@dataclass(frozen=True)
class HostGpus:
    """count: NVIDIA GPUs of the host; source: which of nvml, proc, pci said so ("none" when none did); evidence: what
    each source said, in words; kernel_module_loaded: /proc/driver/nvidia exists."""

    count: int
    source: str
    evidence: str
    kernel_module_loaded: bool


def nvml_count(importer: Optional[Callable[[], Any]] = None) -> Tuple[Optional[int], str]:
    """(GPUs NVML counts, or None when NVML is not usable; what NVML said)."""
    session = NvmlSession()
    try:
        session.open(importer)
        if not isinstance(session.device_count, int):
            return None, "NVML: %s" % session.reason
        return session.device_count, "NVML: %d GPU(s)" % session.device_count
    finally:
        session.close()


def _listed(directory: str) -> Tuple[Optional[List[str]], str]:
    """(the directory's entries sorted, "") or (None, why it could not be listed)."""
    try:
        return sorted(os.listdir(directory)), ""
    except OSError as exc:
        return None, "%s: not readable (%s)" % (directory, exc.strerror or exc)


def proc_count(proc_root: str = "/proc") -> Tuple[Optional[int], str]:
    """(GPUs the NVIDIA kernel module knows: one directory each in driver/nvidia/gpus, or None; what was read)."""
    gpus = os.path.join(proc_root, "driver", "nvidia", "gpus")
    entries, unreadable = _listed(gpus)
    if entries is None:
        return None, unreadable
    return len(entries), "%s: %d GPU(s)%s" % (gpus, len(entries), " (%s)" % ", ".join(entries) if entries else "")


def pci_count(sys_root: str = "/sys") -> Tuple[Optional[int], str]:
    """(NVIDIA VGA/3D controllers on the PCI bus, or None; what was read)."""
    devices = os.path.join(sys_root, "bus", "pci", "devices")
    addresses, unreadable = _listed(devices)
    if addresses is None:
        return None, unreadable
    gpus: List[str] = [address for address in addresses if is_nvidia_gpu(os.path.join(devices, address))]
    return len(gpus), "PCI: %d NVIDIA GPU(s)%s" % (len(gpus), " (%s)" % ", ".join(gpus) if gpus else "")


def is_nvidia_gpu(device: str) -> bool:
    """Whether the sysfs PCI device directory is an NVIDIA VGA or 3D controller (an NVSwitch is not)."""
    try:
        with open(os.path.join(device, "vendor"), encoding="ascii") as handle:
            vendor = handle.read().strip().lower()
        with open(os.path.join(device, "class"), encoding="ascii") as handle:
            device_class = handle.read().strip().lower()
    except (OSError, UnicodeDecodeError):
        return False
    return vendor == NVIDIA_VENDOR and device_class.startswith(GPU_CLASS_PREFIXES)


def read_host_gpus(proc_root: str = "/proc", sys_root: str = "/sys",
                   nvml_importer: Optional[Callable[[], Any]] = None) -> HostGpus:
    """The first source, in the order NVML, /proc, PCI, that counts a GPU decides; every source is in the evidence
    (a GPU the driver could not initialise is still on the PCI bus)."""
    counts = dict(zip(SOURCES, (nvml_count(nvml_importer), proc_count(proc_root), pci_count(sys_root))))
    evidence = "; ".join(said for unused_count, said in counts.values())
    loaded = not missing_kernel_module(proc_root)
    for source in SOURCES:
        count = counts[source][0]
        if count:
            return HostGpus(count=count, source=source, evidence=evidence, kernel_module_loaded=loaded)
    return HostGpus(count=0, source="none", evidence=evidence, kernel_module_loaded=loaded)


def nothing_to_measure(proc_root: str = "/proc", sys_root: str = "/sys",
                       nvml_importer: Optional[Callable[[], Any]] = None) -> Optional[str]:
    """Why a GPU probe has nothing to measure on a host with no NVIDIA GPU by any source (with what each source said),
    or None when the host has one."""
    host = read_host_gpus(proc_root, sys_root, nvml_importer)
    if host.count:
        return None
    return "nothing to measure: this host has no NVIDIA GPU (%s)" % host.evidence
