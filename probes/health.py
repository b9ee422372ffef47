"""health probe: is this host's GPU stack sound? Driver, GPUs, topology, device nodes, CUDA init, XIDs."""
from __future__ import annotations

import sys
from typing import Any, Callable, Dict, List, Tuple

from probelib.fields import SectionErrors, is_unavailable
from probelib.health.cgroup_devices import collect_cgroup_devices
from probelib.health.context import HealthContext, SystemRoots
from probelib.health.cuda_init import collect_cuda_init
from probelib.health.device_nodes import collect_device_nodes
from probelib.health.kernel_log import collect_kernel_log
from probelib.health.nvml_access import NvmlSession
from probelib.health.nvml_devices import collect_gpus, nvml_bus_ids
from probelib.health.nvml_topology import collect_topology
from probelib.health.platform_info import collect_platform
from probelib.health.software import collect_software
from probelib.runner import ProbeResult, main

DESCRIPTION = (
    "Read the health of this host's GPU stack through NVML (nvidia-ml-py) and the kernel: driver and CUDA "
    "versions, every GPU's identity, clocks, power, ECC, row remapping, PCIe and NVLink state, GPU-pair topology, "
    "/dev/nvidia* majors against /proc/devices, the device cgroup, CUDA initialisation in a fresh process, and "
    "XID events in the kernel log. Works without a GPU: then it says why, and still reports the platform."
)
DEFAULTS: Dict[str, Any] = {
    "cuda_init": True,
    "cuda_init_timeout_s": 120,
    "kernel_log_lines": 20000,
    "device_open_test": True,
}

Section = Callable[[HealthContext], Any]
REGISTRY: List[Tuple[str, Section]] = [
    ("platform", collect_platform),
    ("software", collect_software),
    ("gpus", collect_gpus),
    ("topology", collect_topology),
    ("device_nodes", collect_device_nodes),
    ("cgroup_devices", collect_cgroup_devices),
    ("cuda_init", collect_cuda_init),
    ("kernel_log", lambda context: collect_kernel_log(context, nvml_bus_ids(context))),
]
ENVIRONMENT_FROM_SOFTWARE = ("driver_version", "cuda_driver_version", "nvml_version", "nvidia_ml_py_version",
                             "kernel_module_version")
ENVIRONMENT_FROM_CUDA_INIT = ("torch_version", "torch_cuda_version", "nccl_version", "cudnn_version")


def collect(params: Dict[str, Any], roots: SystemRoots = None, nvml: NvmlSession = None) -> ProbeResult:
    session = nvml if nvml is not None else NvmlSession().open()
    context = HealthContext(params=params, nvml=session, roots=roots or SystemRoots())
    errors = SectionErrors()
    data: Dict[str, Any] = {}
    usable = session.usable
    try:
        for name, section in REGISTRY:
            data[name] = errors.run(name, lambda: section(context))
    finally:
        session.close()
    data["errors"] = errors.errors
    return ProbeResult(status_of(usable, errors), data, reason_of(usable, session, errors), environment_of(data))


def status_of(nvml_usable: bool, errors: SectionErrors) -> str:
    if not nvml_usable:
        return "unavailable"
    return "partial" if errors.errors else "ok"


def reason_of(nvml_usable: bool, session: NvmlSession, errors: SectionErrors) -> str:
    reasons = []
    if not nvml_usable:
        reasons.append(session.reason)
    if errors.errors:
        reasons.append("sections that failed: %s" % ", ".join(
            "%s (%s)" % (error["section"], error["error"]) for error in errors.errors))
    return "; ".join(reasons)


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
    sys.exit(main("health", DESCRIPTION, collect, defaults=DEFAULTS))
