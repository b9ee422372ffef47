"""health probe: is this host's GPU stack sound? Driver, GPUs, topology, device nodes, CUDA init, XIDs."""
from __future__ import annotations

import os
import sys
from typing import Any, Callable, Dict, List, Tuple

from probe_packages.health.cgroup_devices import collect_cgroup_devices
from probe_packages.health.cuda_init import collect_cuda_init
from probe_packages.health.device_nodes import collect_device_nodes, read_after_init, read_device_nodes
from probe_packages.health.kernel_log import collect_kernel_log
from probe_packages.health.machine import collect_machine
from probe_packages.health.nvml_devices import collect_gpus
from probe_packages.health.platform_info import collect_platform
from probe_packages.health.software import collect_software
from probelib import outcome
from probelib.fields import SectionErrors, is_unavailable
from probelib.nvml.access import NvmlSession
from probelib.nvml.context import ReadContext
from probelib.nvml.identity import nvml_bus_ids
from probelib.nvml.topology import collect_topology
from probelib.runner import ProbeResult, main
from probelib.system.aer import collect_pcie_aer
from probelib.system.roots import SystemRoots

DESCRIPTION = (
    "Read the health of this host's GPU stack through NVML (nvidia-ml-py) and the kernel: driver and CUDA "
    "versions, every GPU's identity, clocks, power, ECC, row remapping, PCIe and NVLink state, GPU-pair topology, "
    "/dev/nvidia* majors against /proc/devices, the device cgroup, CUDA initialisation in a fresh process, "
    "XID events and other classified kernel-log lines (SXID, fallen off the bus, PCIe AER, NIC link, PCIe-limited, NVRM "
    "assertions), the PCIe AER counters of the GPUs, NICs and their bridges, and the machine's own shape (every "
    "NVIDIA GPU on the PCI bus with its driver and whether NVML lists it, the CPU's hypervisor flag, DMI). Works "
    "without a GPU: then it says why, and still reports the platform."
)

Section = Callable[[ReadContext], Any]
StatFunction = Callable[[str], Any]
NvmlOpener = Callable[[SystemRoots], NvmlSession]
# Where the readings made before NVML opened are kept in ReadContext.cache.
AS_FOUND = "as_found"


def device_nodes_with_nvml(context: ReadContext) -> Any:
    """The nodes as found before NVML opened, with the open test and NVML's GPU count added now."""
    return collect_device_nodes(context, as_found=context.cache[AS_FOUND]["device_nodes"])


def cgroup_devices_as_found(context: ReadContext) -> Any:
    return context.cache[AS_FOUND]["cgroup_devices"]


REGISTRY: List[Tuple[str, Section]] = [
    ("platform", collect_platform),
    ("software", collect_software),
    ("gpus", collect_gpus),
    ("topology", collect_topology),
    ("machine", collect_machine),
    ("device_nodes", device_nodes_with_nvml),
    ("cgroup_devices", cgroup_devices_as_found),
    ("cuda_init", collect_cuda_init),
    ("kernel_log", lambda context: collect_kernel_log(context, nvml_bus_ids(context))),
    ("pcie_aer", lambda context: collect_pcie_aer(context.roots.sys)),
]
ENVIRONMENT_FROM_SOFTWARE = ("driver_version", "cuda_driver_version", "nvml_version", "nvidia_ml_py_version",
                             "kernel_module_version")
ENVIRONMENT_FROM_CUDA_INIT = ("torch_version", "torch_cuda_version", "nccl_version", "cudnn_version")


def collect(params: Dict[str, Any], roots: SystemRoots = None, nvml: NvmlSession = None,
            open_nvml: NvmlOpener = None, stat_fn: StatFunction = os.stat) -> ProbeResult:
    """nvml: a session the caller already opened (then the first reading comes after NVML); open_nvml: how to open one
    after the first reading (default nvidia-ml-py); stat_fn: how a node is stat'ed (tests give files device numbers)."""
    roots = roots or SystemRoots()
    errors = SectionErrors()
    as_found = read_before_nvml(params, roots, errors, stat_fn)
    session = nvml if nvml is not None else (open_nvml or open_nvml_session)(roots)
    context = ReadContext(params=params, nvml=session, roots=roots, cache={AS_FOUND: as_found})
    data: Dict[str, Any] = {}
    usable = session.usable
    try:
        for name, section in REGISTRY:
            data[name] = errors.run(name, lambda: section(context))
    finally:
        session.close()
    read_again_after_init(data, roots, errors, stat_fn)
    data["errors"] = errors.errors
    status, reason = outcome_of(usable, session, errors)
    return ProbeResult(status, data, reason, environment_of(data))


def open_nvml_session(roots: SystemRoots) -> NvmlSession:
    return NvmlSession().open(proc_root=roots.proc)


def read_before_nvml(params: Dict[str, Any], roots: SystemRoots, errors: SectionErrors,
                     stat_fn: StatFunction) -> Dict[str, Any]:
    """The device nodes and the cgroup device rules as the host has them. As root, NVML and CUDA initialisation
    re-create stale /dev/nvidia* nodes, so this reading comes before anything loads either."""
    context = ReadContext(params=params, nvml=NvmlSession(), roots=roots)
    return {
        "device_nodes": errors.run("device_nodes", lambda: read_device_nodes(roots, stat_fn)),
        "cgroup_devices": errors.run("cgroup_devices", lambda: collect_cgroup_devices(context)),
    }


def read_again_after_init(data: Dict[str, Any], roots: SystemRoots, errors: SectionErrors,
                          stat_fn: StatFunction) -> None:
    """device_nodes.after_init: the nodes read again once NVML and the CUDA init section ran, and what changed."""
    nodes = data.get("device_nodes")
    if not isinstance(nodes, dict) or is_unavailable(nodes):
        return
    nodes["after_init"] = errors.run("device_nodes.after_init", lambda: read_after_init(
        roots, nodes["nodes"], nodes["probe_ran_as_root"], stat_fn))


def outcome_of(nvml_usable: bool, session: NvmlSession, errors: SectionErrors) -> Tuple[str, str]:
    """(status, reason). Without a usable NVML the probe's subject is absent: unavailable (the platform is still
    reported), and the reason starts with why NVML is not usable."""
    return outcome.decide(errors.errors, lambda error: "%s (%s)" % (error["section"], error["error"]), nvml_usable,
                          "sections that failed: ", unmeasured="unavailable", unmeasured_because=session.reason,
                          separator=", ")


def environment_of(data: Dict[str, Any]) -> Dict[str, Any]:
    environment: Dict[str, Any] = {}
    for section, keys in (("software", ENVIRONMENT_FROM_SOFTWARE), ("cuda_init", ENVIRONMENT_FROM_CUDA_INIT)):
        values = data.get(section)
        if not isinstance(values, dict) or is_unavailable(values):
            continue
        for key in keys:
            value = values.get(key)
            if value is not None and not is_unavailable(value):
                environment[key] = value
    return environment


if __name__ == "__main__":
    sys.exit(main("health", DESCRIPTION, collect))
