"""Per-GPU state from NVML: identity, memory, clocks, power, thermals, ECC, PCIe, modes, NVLink (state, error counters), the
NVSwitch fabric, processes."""
from __future__ import annotations

from typing import Any, Dict

from probelib.fields import is_unavailable, read_field, unavailable
from probelib.nvml.access import NvmlReader
from probelib.nvml.clock_event_durations import since_driver_load
from probelib.nvml.clock_event_reasons import describe_clock_event_reasons
from probelib.nvml.context import ReadContext
from probelib.nvml.firmware import nonempty_version, read_firmware

from probelib.nvml.gpu_fabric import read_gpu_fabric
from probelib.nvml.gpu_processes import collect_processes
from probelib.nvml.identity import gpu_identity, gpu_nvlinks
from probelib.nvml.memory_errors import enabled_name, read_ecc, read_remapped_rows
from probelib.nvml.nvlink_errors import read_nvlink_errors

MIB = 1 << 20
# nvml.h enum values.
CLOCK_GRAPHICS, CLOCK_SM, CLOCK_MEM = 0, 1, 2
TEMPERATURE_GPU = 0
THRESHOLD_SHUTDOWN, THRESHOLD_SLOWDOWN, THRESHOLD_MEM_MAX, THRESHOLD_GPU_MAX = 0, 1, 2, 3
RETIRED_MULTIPLE_SINGLE_BIT, RETIRED_DOUBLE_BIT = 0, 1
COMPUTE_MODES = {0: "default", 1: "exclusive_thread", 2: "prohibited", 3: "exclusive_process"}
# nvmlGpuVirtualizationMode_t
VIRTUALIZATION_MODES = {0: "none", 1: "pass_through", 2: "vgpu", 3: "host_vgpu", 4: "host_vsga"}


def virtualization_mode_name(value: int) -> str:
    return VIRTUALIZATION_MODES.get(int(value), "unknown(%d)" % int(value))


def to_mib(value: int) -> int:
    return int(value) // MIB


def milliwatts_to_w(value: int) -> float:
    return round(value / 1000.0, 3)


def collect_gpus(context: ReadContext) -> Any:
    nvml = context.nvml
    if not nvml.usable:
        return unavailable(nvml.reason)
    gpus = []
    for index, handle in enumerate(nvml.handles):
        if handle is None:
            gpus.append({"index": index, "error": nvml.handle_failures.get(index, "no handle")})
            continue
        gpus.append(read_field(lambda: describe_gpu(context, index, handle),
                               "GPU %d" % index))
    return gpus


def describe_gpu(context: ReadContext, index: int, handle: Any) -> Dict[str, Any]:
    reader = context.nvml.reader
    identity = gpu_identity(context, index)
    pci = identity["pci_info"]
    return {
        "index": index,
        "name": reader.value("nvmlDeviceGetName", handle),
        "uuid": reader.value("nvmlDeviceGetUUID", handle),
        "serial": reader.value("nvmlDeviceGetSerial", handle),
        "minor_number": reader.value("nvmlDeviceGetMinorNumber", handle),
        "board_part_number": reader.value("nvmlDeviceGetBoardPartNumber", handle),
        "vbios_version": reader.value("nvmlDeviceGetVbiosVersion", handle),
        "inforom_image_version": reader.value("nvmlDeviceGetInforomImageVersion", handle),
        "gsp_firmware_version": reader.value("nvmlDeviceGetGspFirmwareVersion", handle, convert=nonempty_version),
        "firmware": read_firmware(reader, handle),
        "virtualization_mode": reader.value("nvmlDeviceGetVirtualizationMode", handle, convert=virtualization_mode_name),
        "pci": {
            "bus_id": identity["bus_id"],
            "device_id": pci if is_unavailable(pci) else "0x%08x" % pci.pciDeviceId,
            "subsystem_id": pci if is_unavailable(pci) else "0x%08x" % pci.pciSubSystemId,
        },
        "memory": read_memory(reader, handle),
        "bar1": read_bar1(reader, handle),
        "clocks": read_clocks(reader, handle),
        "clock_event_reasons": read_clock_event_reasons(reader, handle),
        "clock_event_durations": read_field(lambda: since_driver_load(reader, handle, context.roots.proc),
                                            "the clock-event duration counters"),
        "power": read_power(reader, handle),
        "temperature": read_temperature(reader, handle),
        "fan_speed_percent": reader.value("nvmlDeviceGetFanSpeed", handle),
        "ecc": read_ecc(reader, handle),
        "retired_pages": read_retired_pages(reader, handle),
        "remapped_rows": read_remapped_rows(reader, handle),
        "pcie": read_pcie(reader, handle),
        "persistence_mode": reader.value("nvmlDeviceGetPersistenceMode", handle, convert=enabled_name),
        "compute_mode": reader.value("nvmlDeviceGetComputeMode", handle,
                                     convert=lambda mode: COMPUTE_MODES.get(mode, "unknown(%d)" % mode)),
        "mig_mode": read_mig_mode(reader, handle),
        "numa": identity["numa"],
        "nvlink": gpu_nvlinks(context, index),
        "nvlink_errors": read_nvlink_errors(reader, handle, gpu_nvlinks(context, index)),
        "fabric": read_gpu_fabric(reader, handle),
        "processes": collect_processes(reader, handle, context.roots.proc),
    }


def _split_pair(value: Any, first: str, second: str, convert=lambda v: v) -> Any:
    if is_unavailable(value):
        return value
    return {first: convert(value[0]), second: convert(value[1])}


def read_memory(reader: NvmlReader, handle: Any) -> Any:
    memory = reader.value("nvmlDeviceGetMemoryInfo", handle)
    if is_unavailable(memory):
        return memory
    return {"total_mib": to_mib(memory.total), "used_mib": to_mib(memory.used), "free_mib": to_mib(memory.free)}


def read_bar1(reader: NvmlReader, handle: Any) -> Any:
    bar1 = reader.value("nvmlDeviceGetBAR1MemoryInfo", handle)
    if is_unavailable(bar1):
        return bar1
    return {"total_mib": to_mib(bar1.bar1Total), "used_mib": to_mib(bar1.bar1Used), "free_mib": to_mib(bar1.bar1Free)}


def read_clocks(reader: NvmlReader, handle: Any) -> Dict[str, Any]:
    return {
        "sm_mhz": reader.value("nvmlDeviceGetClockInfo", handle, CLOCK_SM),
        "memory_mhz": reader.value("nvmlDeviceGetClockInfo", handle, CLOCK_MEM),
        "graphics_mhz": reader.value("nvmlDeviceGetClockInfo", handle, CLOCK_GRAPHICS),
        "max_sm_mhz": reader.value("nvmlDeviceGetMaxClockInfo", handle, CLOCK_SM),
        "max_memory_mhz": reader.value("nvmlDeviceGetMaxClockInfo", handle, CLOCK_MEM),
        "max_graphics_mhz": reader.value("nvmlDeviceGetMaxClockInfo", handle, CLOCK_GRAPHICS),
        "applications_graphics_mhz": reader.value("nvmlDeviceGetApplicationsClock", handle, CLOCK_GRAPHICS),
        "applications_memory_mhz": reader.value("nvmlDeviceGetApplicationsClock", handle, CLOCK_MEM),
    }


def read_clock_event_reasons(reader: NvmlReader, handle: Any) -> Any:
    mask, method = reader.first_value(
        ["nvmlDeviceGetCurrentClocksEventReasons", "nvmlDeviceGetCurrentClocksThrottleReasons"], handle)
    if method is None:
        return mask
    return describe_clock_event_reasons(int(mask), method)


def read_power(reader: NvmlReader, handle: Any) -> Dict[str, Any]:
    constraints = reader.value("nvmlDeviceGetPowerManagementLimitConstraints", handle)
    return {
        "draw_w": reader.value("nvmlDeviceGetPowerUsage", handle, convert=milliwatts_to_w),
        "limit_w": reader.value("nvmlDeviceGetPowerManagementLimit", handle, convert=milliwatts_to_w),
        "default_limit_w": reader.value("nvmlDeviceGetPowerManagementDefaultLimit", handle,
                                        convert=milliwatts_to_w),
        "enforced_limit_w": reader.value("nvmlDeviceGetEnforcedPowerLimit", handle, convert=milliwatts_to_w),
        "min_limit_w": constraints if is_unavailable(constraints) else milliwatts_to_w(constraints[0]),
        "max_limit_w": constraints if is_unavailable(constraints) else milliwatts_to_w(constraints[1]),
    }


def read_temperature(reader: NvmlReader, handle: Any) -> Dict[str, Any]:
    current, unused_function = reader.first_value(["nvmlDeviceGetTemperatureV", "nvmlDeviceGetTemperature"],
                                                  handle, TEMPERATURE_GPU)
    return {
        "gpu_c": current,
        "slowdown_threshold_c": reader.value("nvmlDeviceGetTemperatureThreshold", handle, THRESHOLD_SLOWDOWN),
        "shutdown_threshold_c": reader.value("nvmlDeviceGetTemperatureThreshold", handle, THRESHOLD_SHUTDOWN),
        "gpu_max_threshold_c": reader.value("nvmlDeviceGetTemperatureThreshold", handle, THRESHOLD_GPU_MAX),
        "memory_max_threshold_c": reader.value("nvmlDeviceGetTemperatureThreshold", handle, THRESHOLD_MEM_MAX),
    }


def read_retired_pages(reader: NvmlReader, handle: Any) -> Any:
    single = reader.value("nvmlDeviceGetRetiredPages", handle, RETIRED_MULTIPLE_SINGLE_BIT, convert=len)
    double = reader.value("nvmlDeviceGetRetiredPages", handle, RETIRED_DOUBLE_BIT, convert=len)
    pending = reader.value("nvmlDeviceGetRetiredPagesPendingStatus", handle, convert=bool)
    fields = (single, double, pending)
    if all(is_unavailable(value) for value in fields):
        return unavailable(single["unavailable"])
    return {"single_bit_ecc_count": single, "double_bit_ecc_count": double, "pending": pending}


def read_pcie(reader: NvmlReader, handle: Any) -> Dict[str, Any]:
    return {
        "current_link_gen": reader.value("nvmlDeviceGetCurrPcieLinkGeneration", handle),
        "max_link_gen": reader.value("nvmlDeviceGetMaxPcieLinkGeneration", handle),
        "gpu_max_link_gen": reader.value("nvmlDeviceGetGpuMaxPcieLinkGeneration", handle),
        "current_link_width": reader.value("nvmlDeviceGetCurrPcieLinkWidth", handle),
        "max_link_width": reader.value("nvmlDeviceGetMaxPcieLinkWidth", handle),
    }


def read_mig_mode(reader: NvmlReader, handle: Any) -> Any:
    return _split_pair(reader.value("nvmlDeviceGetMigMode", handle), "current", "pending", enabled_name)
