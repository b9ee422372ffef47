"""health describes the machine: its data read into the judge's generic MachineFacts (judge/machine_facts.py).

The GPUs NVML lists (name, PCI device id, memory: what a baseline is matched against), their identities (UUID and
board serial, for fleet.same_gpus), the /dev/nvidia* majors, and how many GPUs the host should have
(machine_shape.py). Pure Python.
"""
from __future__ import annotations

import re
from typing import Any, Dict, List, Mapping, Optional, Set, Tuple

from ...probe_kit.kit import ExpectedGpus, GpuDescriptor, MachineFacts, MISSING, dig, is_unavailable
from .machine_shape import machine_shape

# The rule check whose params.expected is the inventory's override of the expected GPU count.
EXPECTED_GPUS_CHECK = "gpu_count"
# What NVML gives for a board without a readable serial: never evidence that two boards are one.
_NOT_A_SERIAL = re.compile(r"^\[?(|0+|n/?a|not (supported|available)|unknown|none)\]?$", re.IGNORECASE)
# The guests of one board share its serial (each vGPU has its own UUID).
_SHARED_BOARD_MODES = ("vgpu",)


def known(value: Any) -> Any:
    """The value, or None when it is {"unavailable": ...} or absent."""
    return None if value is None or is_unavailable(value) else value


def gpu_descriptor(gpu: Any) -> GpuDescriptor:
    """One gpus[] entry as the judge matches it: NVML name, PCI device id in lower case, memory total MiB."""
    if not isinstance(gpu, dict):
        return GpuDescriptor()
    name = known(gpu.get("name"))
    pci = gpu.get("pci") if isinstance(gpu.get("pci"), dict) else {}
    device_id = known(pci.get("device_id"))
    memory = known(gpu.get("memory"))
    total = known(memory.get("total_mib")) if isinstance(memory, dict) else None
    return GpuDescriptor(
        index=gpu.get("index"), uuid=gpu.get("uuid") if isinstance(gpu.get("uuid"), str) else None,
        name=name if isinstance(name, str) else None, device_id=device_id.lower() if isinstance(device_id, str) else None,
        memory_mib=total if isinstance(total, int) else None,
        unreadable="%s" % (gpu["error"],) if "error" in gpu and "name" not in gpu else None)


def _mig_enabled(gpu: Mapping[str, Any]) -> bool:
    mode = gpu.get("mig_mode")
    return isinstance(mode, Mapping) and mode.get("current") == "enabled"


def gpu_identities(gpus: Any) -> Tuple[Set[str], Set[str]]:
    """("uuid <UUID>" and "serial <serial>" of each GPU not in MIG mode, the UUIDs of those in MIG mode).

    A GPU in MIG mode is left out: each MIG instance of one GPU may be given to another container, and those containers
    report the same parent GPU. A vGPU guest's board serial is left out too."""
    identities: Set[str] = set()
    mig_uuids: Set[str] = set()
    for gpu in gpus if isinstance(gpus, list) else []:
        if not isinstance(gpu, Mapping):
            continue
        uuid, serial = gpu.get("uuid"), gpu.get("serial")
        if _mig_enabled(gpu):
            if isinstance(uuid, str):
                mig_uuids.add(uuid)
            continue
        if isinstance(uuid, str) and uuid:
            identities.add("uuid %s" % uuid)
        if (isinstance(serial, str) and not _NOT_A_SERIAL.match(serial.strip())
                and gpu.get("virtualization_mode") not in _SHARED_BOARD_MODES):
            identities.add("serial %s" % serial.strip())
    return identities, mig_uuids


def device_majors(health: Mapping[str, Any]) -> Optional[Dict[str, int]]:
    """{/dev path: major} of the NVIDIA device nodes the health probe opened; None when it could not list them."""
    nodes = dig(health, "device_nodes", "nodes")
    if not isinstance(nodes, list):
        return None
    return {node["path"]: node["major"] for node in nodes
            if isinstance(node, dict) and isinstance(node.get("path"), str) and isinstance(node.get("major"), int)}


def machine_facts(data: Mapping[str, Any]) -> MachineFacts:
    """The facts of one health result's data."""
    gpus = data.get("gpus", MISSING)
    identities, mig_uuids = gpu_identities(gpus)
    facts: Dict[str, Any] = dict(identities=frozenset(identities), shared_uuids=frozenset(mig_uuids),
                                 device_majors=device_majors(data))
    if isinstance(gpus, list):
        descriptors: List[GpuDescriptor] = [gpu_descriptor(gpu) for gpu in gpus]
        return MachineFacts(gpus=descriptors, **facts)
    if gpus is MISSING:
        return MachineFacts(gpus=None, gpus_unavailable="no gpus field", **facts)
    return MachineFacts(gpus=None, gpus_unavailable="%s" % (gpus["unavailable"],) if is_unavailable(gpus) else None, **facts)


# The fleet index's columns of a host where the health probe did not run (index_columns gives them where it did).
NOT_RUN_COLUMNS = {"gpus": "—", "driver": "—", "cuda_init": "not run", "cuda_flag": "na"}


def index_columns(data: Any) -> Dict[str, str]:
    """GPU count and model, driver, CUDA init: view.fleet_columns, imported only when the index is rendered."""
    from .view import fleet_columns  # report code: not for the judge alone, nor for gemm's derived peaks
    return fleet_columns(data)


def expected_gpus(data: Optional[Mapping[str, Any]], baseline: Optional[Mapping[str, Any]],
                  override: Optional[Tuple[int, str]]) -> ExpectedGpus:
    """How many GPUs the host should have, from machine_shape.py's evidence; the shape goes to the checks."""
    shape = machine_shape(data, baseline, override)
    return ExpectedGpus(shape.expected_gpus, shape.expected_source, shape)
