# -*- coding: utf-8 -*-
# Copyright: gpufleet.validation contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""What a host should have, from the machine's own evidence before the SKU's defaults.

The health probe records every NVIDIA GPU on the PCI bus with its driver and whether NVML lists it, the CPU's
hypervisor flag, DMI, each GPU's NVML virtualization mode, and container hints (data.machine, data.gpus,
data.platform). From these, in order:

1. the inventory's override of the health.gpu_count rule (params.expected);
2. a virtual machine (NVML pass-through or vGPU, or the CPU's hypervisor flag): the GPUs on its own PCI bus, since a
   VM is given a slice of a board and its bus shows exactly that slice;
3. a container on a host that is not a VM: the GPUs it was given (those on the bus whose /dev/nvidiaN node it has);
4. bare metal: the SKU's gpus_per_node where the baseline sets one, else the GPUs on the bus.

A result written before the probe recorded the machine falls back to the SKU's gpus_per_node. Pure Python.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Dict, List, Mapping, Optional, Tuple

from ...probe_kit.kit import baseline_file, MISSING, dig, is_unavailable

VM_MODES = ("pass_through", "vgpu")
NVIDIA_DRIVER = "nvidia"
# A GPU bound to one of these drivers is deliberately not the host's own: it is handed to virtual machines.
PASSED_ON_DRIVERS = ("vfio-pci", "pci-stub")


@dataclass(frozen=True)
class MachineShape:
    """platform: bare_metal | vm | container | unknown, with the evidence in words; bus_gpus: the NVIDIA GPUs on the
    PCI bus that are this host's to validate (None when the bus was not read); expected_gpus and its source in words;
    note: why a VM or container slice is judged against fewer GPUs than its SKU's board has ("" otherwise)."""

    platform: str
    platform_evidence: str
    bus_gpus: Optional[List[Dict[str, Any]]]
    expected_gpus: Optional[int]
    expected_source: str
    note: str = ""
    passed_on: List[Dict[str, Any]] = field(default_factory=list)
    not_given: List[Dict[str, Any]] = field(default_factory=list)
    in_vm: bool = False

    @property
    def passed_on_drivers(self) -> str:
        """The drivers the GPUs handed to virtual machines are bound to, in words ("vfio-pci")."""
        return drivers_of(self.passed_on)

    @property
    def is_slice(self) -> bool:
        return self.platform in ("vm", "container")


def drivers_of(gpus: List[Dict[str, Any]]) -> str:
    """The drivers some bus GPUs are bound to, in words ("vfio-pci")."""
    return ", ".join(sorted(set(str(gpu.get("driver")) for gpu in gpus)))


def _virtualization_modes(gpus: Any) -> List[str]:
    if not isinstance(gpus, list):
        return []
    return [gpu["virtualization_mode"] for gpu in gpus if isinstance(gpu, dict) and isinstance(gpu.get("virtualization_mode"), str)]


def in_virtual_machine(health: Mapping[str, Any]) -> Tuple[bool, str]:
    """(whether the host is a virtual machine, the evidence in words)."""
    vm_modes = sorted(set(mode for mode in _virtualization_modes(health.get("gpus")) if mode in VM_MODES))
    words = []
    if vm_modes:
        words.append("NVML virtualization mode %s" % ", ".join(mode.replace("_", "-") for mode in vm_modes))
    if dig(health, "machine", "cpu_hypervisor_flag") is True:
        words.append("the CPU's hypervisor flag is set")
    return bool(words), "; ".join(words) + _dmi_words(health) if words else ""


def platform_of(health: Mapping[str, Any], vm: bool, vm_words: str) -> Tuple[str, str]:
    """(platform, the evidence in words) from the health data and in_virtual_machine's answer: a container (in a VM or
    not) is judged by what it was given, a VM by its own bus."""
    modes = _virtualization_modes(health.get("gpus"))
    hypervisor = dig(health, "machine", "cpu_hypervisor_flag")
    if dig(health, "platform", "container", "in_container") is True:
        hints = dig(health, "platform", "container", "hints")
        hints_words = ", ".join(str(hint) for hint in hints) if isinstance(hints, list) else ""
        in_vm = ", in a virtual machine (%s)" % vm_words if vm else ""
        return "container", "a container (%s)%s" % (hints_words or "hints recorded", in_vm)
    if vm:
        return "vm", vm_words
    if hypervisor is False:
        return "bare_metal", "bare metal: no hypervisor flag%s%s" % (
            ", NVML virtualization mode %s" % ", ".join(sorted(set(modes))).replace("_", "-") if modes else "", _dmi_words(health))
    return "unknown", "not known whether this is a virtual machine (the CPU's hypervisor flag was not recorded)"


def _dmi_words(health: Mapping[str, Any]) -> str:
    dmi = dig(health, "machine", "dmi")
    if not isinstance(dmi, dict) or is_unavailable(dmi):
        return ""
    parts = [dmi.get(key) for key in ("sys_vendor", "product_name") if isinstance(dmi.get(key), str) and dmi.get(key).strip()]
    return " (DMI: %s)" % " ".join(parts) if parts else ""


def _bus(health: Mapping[str, Any]) -> Optional[List[Dict[str, Any]]]:
    gpus = dig(health, "machine", "pci_gpus")
    if gpus is MISSING or not isinstance(gpus, list):
        return None
    return [gpu for gpu in gpus if isinstance(gpu, dict) and isinstance(gpu.get("address"), str)]


def _given_to_container(health: Mapping[str, Any], bus: List[Dict[str, Any]]) -> Optional[List[Dict[str, Any]]]:
    """The bus GPUs this container was given: NVML lists them, or their /dev/nvidiaN node is in the container (the
    container runtime hides the /proc/driver/nvidia entry of a GPU it did not give, so an unknown minor is not one).
    None when the container's device nodes are not known."""
    minors = dig(health, "device_nodes", "gpu_node_minors")
    if not isinstance(minors, list):
        return None
    return [gpu for gpu in bus if gpu.get("in_nvml") is True or (
        isinstance(gpu.get("device_minor"), int) and not isinstance(gpu.get("device_minor"), bool) and gpu["device_minor"] in minors)]


def _plural(count: int) -> str:
    return "%d GPU%s" % (count, "" if count == 1 else "s")


def machine_shape(health: Optional[Mapping[str, Any]], baseline: Optional[Mapping[str, Any]],
                  override: Optional[Tuple[int, str]] = None) -> MachineShape:
    """The host's shape. health: the health probe's data (None when there is none); baseline: its SKU's baseline;
    override: (expected count, its source in words) from the inventory's rule override."""
    health = health or {}
    vm, vm_words = in_virtual_machine(health)
    platform, evidence = platform_of(health, vm, vm_words)
    bus = _bus(health)
    passed_on = [gpu for gpu in bus or [] if gpu.get("driver") in PASSED_ON_DRIVERS]
    own = [gpu for gpu in bus or [] if gpu.get("driver") not in PASSED_ON_DRIVERS] if bus is not None else None
    not_given: List[Dict[str, Any]] = []
    if platform == "container" and own is not None:
        given = _given_to_container(health, own)
        if given is not None:
            not_given = [gpu for gpu in own if gpu not in given]
            own = given
        if vm and not not_given:
            platform, evidence = "vm", vm_words  # a container given every GPU of its VM: the VM's slice is what counts
    per_node = (baseline or {}).get("gpus_per_node")
    sku_source = "%s gpus_per_node" % baseline_file(baseline) if per_node is not None else ""
    shape = dict(platform=platform, platform_evidence=evidence, bus_gpus=own, passed_on=passed_on, not_given=not_given,
                 in_vm=vm)
    if override is not None:
        return MachineShape(expected_gpus=override[0], expected_source=override[1], **shape)
    if own is None:
        if per_node is not None:
            return MachineShape(expected_gpus=per_node, expected_source="%s (this result does not record the PCI bus)" % sku_source,
                                **shape)
        return MachineShape(expected_gpus=None, expected_source="", **shape)
    on_bus = len(own)
    where = "virtual machine" if platform == "vm" else "host"
    bus_words = "the %s on this %s's PCI bus" % (_plural(on_bus), where) if on_bus else "no NVIDIA GPU on this %s's PCI bus" % where
    if platform == "vm":
        note = ""
        if per_node is not None and on_bus != per_node:
            note = ("not the %d of the SKU's board (%s): this is a virtual machine (%s), given a slice of the board, and its "
                    "bus shows that slice" % (per_node, sku_source, evidence))
        return MachineShape(expected_gpus=on_bus, expected_source=bus_words, note=note, **shape)
    if platform == "container":
        words = "the %s this container was given (its /dev/nvidiaN nodes)" % _plural(on_bus)
        if not on_bus:
            words = "no NVIDIA GPU on this host's PCI bus" if not not_given else "no GPU given to this container (%d on the " \
                "host's PCI bus)" % len(not_given)
        note = ""
        if per_node is not None and on_bus != per_node:
            note = "not the %d of the SKU's board (%s): %s" % (per_node, sku_source, evidence)
        return MachineShape(expected_gpus=on_bus, expected_source=words, note=note, **shape)
    if per_node is not None:
        handed = "; less the %d bound to %s, handed to virtual machines" % (len(passed_on), drivers_of(passed_on)) \
            if passed_on else ""
        return MachineShape(expected_gpus=max(per_node - len(passed_on), 0), expected_source="%s (%s%s)" % (
            sku_source, "bare metal" if platform == "bare_metal" else "not known to be a VM", handed), **shape)
    if not on_bus:
        return MachineShape(expected_gpus=0, expected_source=bus_words, **shape)
    return MachineShape(expected_gpus=on_bus, expected_source="%s (the SKU sets no gpus_per_node)" % bus_words, **shape)
