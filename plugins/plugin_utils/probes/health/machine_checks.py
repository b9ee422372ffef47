# -*- coding: utf-8 -*-
# Copyright: gpufleet.validation contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The health checks of the machine's shape: every GPU on the PCI bus is seen by NVML and CUDA (gpus_on_bus), every GPU
NVML or CUDA lists is on the bus (listed_on_bus), and NVML lists the GPUs the host should have (gpu_count), against
machine_shape.py's evidence (context.machine)."""
from __future__ import annotations

from typing import Any, Dict, List, Optional

from ...probe_kit.kit import MISSING, dig, is_unavailable, gpu_label, make_check, unavailable_check, Check
from .machine_shape import NVIDIA_DRIVER, MachineShape, machine_shape

SLICE_REMEDY = ("Nothing to fix when the slice is as it was bought; if this host should have more GPUs, ask for them to be "
                "passed through (or set params.expected in the inventory's rule overrides).")


VM_GPU_REMEDY = ("Restart the virtual machine (the hypervisor resets a passed-through GPU); if the GPU stays unseen, ask the "
                 "provider to check it on its host: a guest cannot reseat a GPU.")


def _shape(data: Dict[str, Any], context: Any) -> MachineShape:
    shape = getattr(context, "machine", None)
    return shape if isinstance(shape, MachineShape) else machine_shape(data, getattr(context, "baseline", None))


def _cuda_uuids(data: Dict[str, Any]) -> Optional[List[str]]:
    """The GPU UUIDs CUDA listed in the health probe's fresh process; None when that cannot be told: CUDA did not
    initialise, CUDA_VISIBLE_DEVICES chose the devices, MIG is on (CUDA lists MIG instances, not GPUs), or a device
    came without a GPU UUID."""
    init = data.get("cuda_init")
    if not isinstance(init, dict) or not init.get("ok") or not isinstance(init.get("devices"), list):
        return None
    environment = dig(data, "platform", "relevant_environment")
    if isinstance(environment, dict) and "CUDA_VISIBLE_DEVICES" in environment:
        return None
    gpus = data.get("gpus")
    if isinstance(gpus, list) and any(isinstance(gpu, dict) and dig(gpu, "mig_mode", "current") == "enabled" for gpu in gpus):
        return None
    uuids = [device.get("uuid") if isinstance(device, dict) else None for device in init["devices"]]
    if not all(isinstance(uuid, str) and uuid.startswith("GPU-") for uuid in uuids):
        return None
    return uuids


def _gpu_words(gpu: Dict[str, Any]) -> str:
    device = gpu.get("device_id")
    return "%s%s" % (gpu["address"], " (device %s)" % device if isinstance(device, str) else "")


def _bus_not_recorded(rule: Dict[str, Any], host: str) -> Check:
    return make_check(rule, host, "skip", "this health result does not record the PCI bus (written by a health probe older "
                      "than its machine section), so the GPUs on the bus were not compared")


def gpus_on_bus(host: str, data: Dict[str, Any], rule: Dict[str, Any], context: Any) -> List[Check]:
    """Each NVIDIA GPU on the PCI bus that is this host's is listed by NVML and initialised by CUDA, on any platform."""
    if dig(data, "machine", "pci_gpus") is MISSING:
        return [_bus_not_recorded(rule, host)]
    shape = _shape(data, context)
    bus = shape.bus_gpus
    if bus is None:
        found = dig(data, "machine", "pci_gpus")
        why = found["unavailable"] if is_unavailable(found) else "not recorded as a list"
        return [make_check(rule, host, "skip", "the NVIDIA GPUs on the PCI bus could not be read, so they were not compared "
                           "with NVML's (the expected count falls back to the SKU's board): %s" % why)]
    nvml_gpus = data.get("gpus")
    nvml_usable = isinstance(nvml_gpus, list)
    by_index = {gpu.get("index"): gpu for gpu in nvml_gpus if isinstance(gpu, dict)} if nvml_usable else {}
    cuda = _cuda_uuids(data)
    checks: List[Check] = []
    fields = {"threshold": "every GPU on the bus listed by NVML and CUDA"}
    for gpu in bus:
        words = _gpu_words(gpu)
        driver = gpu.get("driver")
        if driver is not None and driver != NVIDIA_DRIVER:
            check = make_check(rule, host, rule["severity"], "%s is on the PCI bus but bound to the %s driver, not nvidia: "
                               "blacklist %s (or unbind it) so that the NVIDIA driver takes it" % (words, driver, driver),
                               value=gpu["address"], **fields)
            check.action, check.remedy = "fix_config", "Bind the GPU to the nvidia driver (blacklist the other driver), then reboot."
            checks.append(check)
        elif gpu.get("in_nvml") is False:
            bound = ("bound to the nvidia driver, but NVML does not list it: the GPU failed to initialise or fell off the bus "
                     "(look for XID 79 in the kernel log)" if driver == NVIDIA_DRIVER else
                     "no driver is bound to it: the driver failed to attach or the GPU fell off the bus")
            check = make_check(rule, host, rule["severity"], "%s is on the bus but NVML does not list it; %s; %s" % (
                words, bound, "restart the virtual machine" if shape.platform == "vm" else "reset, reseat, or RMA"),
                value=gpu["address"], **fields)
            if shape.platform == "vm":
                check.action, check.remedy = "reboot", VM_GPU_REMEDY
            checks.append(check)
        elif gpu.get("in_nvml") is True and cuda is not None:
            listed = by_index.get(gpu.get("nvml_index")) or {}
            uuid = listed.get("uuid")
            if isinstance(uuid, str) and uuid not in cuda:
                checks.append(make_check(rule, host, rule["severity"], "%s is listed by NVML as GPU %s but CUDA does not "
                                         "see it (%d of %d CUDA devices listed): reset the GPU or reboot" % (
                                             words, gpu.get("nvml_index"), len(cuda), len(bus)), listed, value=gpu["address"],
                                         **fields))
    if checks:
        return checks
    seen = "listed by NVML" + (" and initialised by CUDA" if cuda is not None else "") if nvml_usable else "on the bus"
    extra = []
    if shape.passed_on:
        extra.append("%d more bound to %s (handed to virtual machines, not judged here)" % (
            len(shape.passed_on), shape.passed_on_drivers))
    if shape.not_given:
        extra.append("%d more on the bus that this container was not given" % len(shape.not_given))
    if not bus:
        return [make_check(rule, host, "pass", "no NVIDIA GPU on this host's PCI bus%s" % (
            "; " + "; ".join(extra) if extra else ""), value=0, unit="GPUs", **fields)]
    if not nvml_usable:
        return [make_check(rule, host, "skip", "%d NVIDIA GPU(s) on the PCI bus (%s); whether NVML lists them is unknown: %s"
                           % (len(bus), ", ".join(gpu["address"] for gpu in bus), dig(data, "gpus", "unavailable")),
                           value=len(bus), unit="GPUs", **fields)]
    return [make_check(rule, host, "pass", "every one of the %d NVIDIA GPU(s) on the PCI bus is %s (%s)%s" % (
        len(bus), seen, ", ".join(gpu["address"] for gpu in bus), "; " + "; ".join(extra) if extra else ""),
        value=len(bus), unit="GPUs", **fields)]


def listed_on_bus(host: str, data: Dict[str, Any], rule: Dict[str, Any], context: Any) -> List[Check]:
    """Every GPU NVML or CUDA lists is on the host's own PCI bus (read from sysfs, without the driver): a GPU listed
    but not on the bus is impossible data (a result from another machine, an edited one, or an NVML library that is not
    the driver's), never a larger slice to judge the host against."""
    found = dig(data, "machine", "pci_gpus")
    if found is MISSING:
        return [make_check(rule, host, "skip", "this health result does not record the PCI bus (written by a health probe "
                           "older than its machine section), so the GPUs NVML and CUDA list were not held against it")]
    if not isinstance(found, list):
        why = found["unavailable"] if is_unavailable(found) else "not recorded as a list"
        return [make_check(rule, host, "skip", "the NVIDIA GPUs on the PCI bus could not be read, so the GPUs NVML and CUDA "
                           "list were not held against them: %s" % why)]
    bus = [gpu for gpu in found if isinstance(gpu, dict) and isinstance(gpu.get("address"), str)]
    nvml = data.get("gpus")
    nvml_gpus = [gpu for gpu in nvml if isinstance(gpu, dict)] if isinstance(nvml, list) else []
    off_bus = nvml_off_bus(bus, nvml_gpus)
    cuda_words = cuda_off_bus(data, bus, nvml_gpus, off_bus)
    on_bus = ", ".join(gpu["address"] for gpu in bus) or "none"
    fields = {"value": len(nvml_gpus), "unit": "GPUs", "reference": len(bus),
              "reference_source": "the NVIDIA GPUs on this host's PCI bus (sysfs): %s" % on_bus,
              "threshold": "every GPU NVML or CUDA lists is on the bus"}
    if off_bus or cuda_words:
        parts = []
        if off_bus:
            parts.append("NVML lists %d GPU(s) but the host's PCI bus holds %d (%s); listed but not on the bus: %s" % (
                len(nvml_gpus), len(bus), on_bus, "; ".join(off_bus)))
        parts.extend(cuda_words)
        return [make_check(rule, host, rule["severity"], "%s: a GPU no bus holds is impossible data (a result from another "
                           "machine or an edited one, or an NVML library that is not the driver's); the GPUs on the bus "
                           "are what this host has" % ". ".join(parts), **fields)]
    if not isinstance(nvml, list):
        return [make_check(rule, host, "skip", "NVML listed no GPU to hold against the %d on the PCI bus (%s)" % (
            len(bus), dig(data, "gpus", "unavailable") if is_unavailable(nvml) else "no GPU list recorded"),
            value=len(bus), unit="GPUs")]
    return [make_check(rule, host, "pass", "every one of the %d GPU(s) NVML lists%s is on the PCI bus (%s)" % (
        len(nvml_gpus), " and every device CUDA lists" if _cuda_devices(data) else "", on_bus), **fields)]


def _bus_id(value: Any) -> Optional[str]:
    """A PCI address as the bus section writes it ("0000:00:06.0"): NVML's 8-digit domain folded to 4."""
    parts = value.strip().lower().split(":") if isinstance(value, str) else []
    if len(parts) != 3:
        return None
    try:
        return "%04x:%s:%s" % (int(parts[0], 16), parts[1], parts[2])
    except ValueError:
        return None


def nvml_off_bus(bus: List[Dict[str, Any]], nvml_gpus: List[Dict[str, Any]]) -> List[str]:
    """The NVML GPUs no bus GPU holds, in words: one whose address is not on the bus, or one at an address another NVML
    GPU already has (a GPU without an address of its own is placed by the bus GPU that names its NVML index); where
    neither places some and NVML lists more GPUs than the bus holds, the count says so."""
    addresses = [gpu["address"] for gpu in bus]
    by_index = {gpu["nvml_index"]: gpu["address"] for gpu in bus
                if gpu.get("in_nvml") is True and isinstance(gpu.get("nvml_index"), int)}
    taken: Dict[str, Any] = {}
    words: List[str] = []
    unknown = 0
    for gpu in nvml_gpus:
        label = gpu_label(gpu)
        address = _bus_id(dig(gpu, "pci", "bus_id"))
        if address is None:
            address = by_index.get(gpu.get("index"))
            if address is None:
                unknown += 1
                continue
        if address not in addresses:
            words.append("%s at %s" % (label, address))
        elif address in taken:
            words.append("%s at %s, the address of %s too" % (label, address, taken[address]))
        else:
            taken[address] = label
    if not words and unknown and len(nvml_gpus) > len(addresses):
        words.append("%d GPU(s) whose PCI address NVML did not give" % unknown)
    return words


def _cuda_devices(data: Dict[str, Any]) -> List[Dict[str, Any]]:
    devices = dig(data, "cuda_init", "devices")
    return [device for device in devices if isinstance(device, dict)] if isinstance(devices, list) else []


def cuda_off_bus(data: Dict[str, Any], bus: List[Dict[str, Any]], nvml_gpus: List[Dict[str, Any]],
                 nvml_words: List[str]) -> List[str]:
    """CUDA listing more GPUs than the bus holds, in words (where NVML's GPUs did not already name the difference). A
    GPU CUDA_VISIBLE_DEVICES hides is fewer devices, never more; with MIG on CUDA lists MIG instances, not GPUs, so its
    count is not compared."""
    devices = _cuda_devices(data)
    if nvml_words or not devices or any(dig(gpu, "mig_mode", "current") == "enabled" for gpu in nvml_gpus):
        return []
    if len(devices) <= len(bus):
        return []
    return ["CUDA lists %d device(s) but the host's PCI bus holds %d GPU(s) (%s)" % (
        len(devices), len(bus), ", ".join(gpu["address"] for gpu in bus) or "none")]


def gpu_count(host: str, data: Dict[str, Any], rule: Dict[str, Any], context: Any) -> List[Check]:
    """NVML lists as many GPUs as the host should have (machine_shape.py says how many, and why)."""
    gpus = data.get("gpus", MISSING)
    if gpus is MISSING:
        return []
    shape = _shape(data, context)
    expected, source = shape.expected_gpus, shape.expected_source
    bus = shape.bus_gpus
    if is_unavailable(gpus):
        if expected == 0:
            return [make_check(rule, host, "pass", "no GPU listed and none expected: %s" % source, value=0, unit="GPUs", reference=0,
                               reference_source=source, threshold="== 0")]
        return [unavailable_check(rule, host, "the GPU count", gpus, status="error")]
    count = len(gpus)
    if expected is None:
        return [make_check(rule, host, "skip", "%d GPU(s) seen; no expected count to hold them against (the PCI bus was not "
                           "read and the SKU sets no gpus_per_node; set params.expected in the inventory's rule overrides)" % count,
                           value=count, unit="GPUs")]
    fields = {"value": count, "unit": "GPUs", "reference": expected, "reference_source": source, "threshold": "== %d" % expected}
    note = "; %s" % shape.note if shape.note else ""
    if count == expected:
        return [make_check(rule, host, "pass", "%d of %d expected GPUs visible to NVML (%s)%s" % (count, expected, source, note),
                           **fields)]
    if count > expected:
        return [make_check(rule, host, "warn", "%d GPUs visible, more than the %d expected (%s)" % (count, expected, source), **fields)]
    if bus is None and shape.platform != "vm" and "gpus_per_node" in source:
        note += ("; if this host is meant to have %d (a VM or container slice), set params.expected: %d for %s in its rule "
                 "overrides" % (count, count, rule["id"]))
    check = make_check(rule, host, rule["severity"], "%d of %d expected GPUs visible to NVML (%s)%s" % (count, expected, source, note),
                       **fields)
    if shape.is_slice and bus is not None and len(bus) == count:
        check.action, check.remedy = "fix_config", SLICE_REMEDY
    return [check]


def gpus_on_board(host: str, data: Dict[str, Any], rule: Dict[str, Any], context: Any) -> List[Check]:
    """Outside a VM or container, the PCI bus holds every GPU the host should have: a GPU missing from the bus of a
    bare-metal board is off the bus altogether (no driver can see it)."""
    if dig(data, "machine", "pci_gpus") is MISSING:
        return [_bus_not_recorded(rule, host)]
    shape = _shape(data, context)
    bus, expected, source = shape.bus_gpus, shape.expected_gpus, shape.expected_source
    if bus is None:
        return []
    if shape.is_slice:
        return [make_check(rule, host, "skip", "a %s is given a slice of a board: its bus holds what it was given (%s), so the "
                           "board's own count is not judged here" % ("virtual machine" if shape.platform == "vm" else "container",
                                                                     source), value=len(bus), unit="GPUs")]
    if expected is None:
        return [make_check(rule, host, "skip", "%d GPU(s) on the PCI bus; how many this board should have is not known" % len(bus),
                           value=len(bus), unit="GPUs")]
    fields = {"value": len(bus), "unit": "GPUs", "reference": expected, "reference_source": source, "threshold": ">= %d" % expected}
    if len(bus) < expected:
        return [make_check(rule, host, rule["severity"], "%d of the %d GPUs this host should have (%s) are on its PCI bus: %d "
                           "missing from the bus of this board (seated badly, unpowered, or dead): reseat, then RMA; %s" % (
                               len(bus), expected, source, expected - len(bus), shape.platform_evidence), **fields)]
    return [make_check(rule, host, "pass", "%d GPU(s) on the PCI bus, as this host should have (%s); %s" % (
        len(bus), source, shape.platform_evidence), **fields)]


MACHINE_CHECKS = {"gpus_on_bus": gpus_on_bus, "listed_on_bus": listed_on_bus, "gpus_on_board": gpus_on_board,
                  "gpu_count": gpu_count}
