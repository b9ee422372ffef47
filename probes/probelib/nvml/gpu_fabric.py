"""The GPU's place in an NVSwitch fabric (nvmlDeviceGetGpuFabricInfoV, else nvmlDeviceGetGpuFabricInfo): whether the
fabric manager has registered it (state), with what result (status), its clique id and cluster UUID."""
from __future__ import annotations

import ctypes
from typing import Any, Dict, List

from probelib.fields import unavailable
from probelib.nvml.access import NVML_ERROR_NOT_SUPPORTED, NvmlReader, failure_reason, nvml_error_code

# (function, the pynvml structure it fills): the versioned call first; it adds the health mask.
FABRIC_FUNCTIONS = (("nvmlDeviceGetGpuFabricInfoV", "c_nvmlGpuFabricInfoV_t"),
                    ("nvmlDeviceGetGpuFabricInfo", "c_nvmlGpuFabricInfo_t"))
# nvml.h nvmlGpuFabricState_t
FABRIC_STATES = {0: "not_supported", 1: "not_started", 2: "in_progress", 3: "completed"}
# nvml.h nvmlReturn_t: the fabric's status is one of these.
NVML_RETURN_NAMES = {
    0: "success", 1: "uninitialized", 2: "invalid_argument", 3: "not_supported", 4: "no_permission",
    5: "already_initialized", 6: "not_found", 7: "insufficient_size", 8: "insufficient_power", 9: "driver_not_loaded",
    10: "timeout", 11: "irq_issue", 12: "library_not_found", 13: "function_not_found", 14: "corrupted_inforom",
    15: "gpu_is_lost", 16: "reset_required", 17: "operating_system", 18: "lib_rm_version_mismatch", 19: "in_use",
    20: "memory", 21: "no_data", 22: "vgpu_ecc_not_supported", 23: "insufficient_resources", 24: "freq_not_supported",
    25: "argument_version_mismatch", 26: "deprecated", 27: "not_ready", 28: "gpu_not_found", 29: "invalid_state",
    999: "unknown",
}

YES_NO = {0: "not_supported", 1: "yes", 2: "no"}
# nvml.h NVML_GPU_FABRIC_HEALTH_MASK_*: (name recorded, shift, width, the values' names)
HEALTH_FIELDS = (
    ("degraded_bandwidth", 0, 0x3, YES_NO),
    ("route_recovery_in_progress", 2, 0x3, YES_NO),
    ("route_unhealthy", 4, 0x3, YES_NO),
    ("access_timeout_recovery_in_progress", 6, 0x3, YES_NO),
    ("incorrect_configuration", 8, 0xF, {0: "not_supported", 1: "none", 2: "incorrect_sysguid", 3: "incorrect_chassis_sn",
                                         4: "no_partition", 5: "insufficient_nvlinks", 6: "incompatible_gpu_fw",
                                         7: "invalid_location", 8: "gpu_state_invalid"}),
    ("partition_assigned", 12, 0x3, YES_NO),
    ("gfm_state", 14, 0x3, {0: "not_supported", 1: "connected", 2: "disconnected"}),
)


def decode_health_mask(mask: int) -> Dict[str, str]:
    """The fabric health mask in words, one entry per field; "not_supported" where the driver does not report it."""
    decoded = {}
    for name, shift, width, names in HEALTH_FIELDS:
        value = (mask >> shift) & width
        decoded[name] = names.get(value, "unknown(%d)" % value)
    return decoded


def return_name(code: Any) -> str:
    if not isinstance(code, int):
        return "unknown(%r)" % (code,)
    return NVML_RETURN_NAMES.get(code, "unknown(%d)" % code)


def read_gpu_fabric(reader: NvmlReader, handle: Any) -> Any:
    """{"state", "status", "clique_id", "cluster_uuid", ...}; NVML's Not Supported is state "not_supported" with its
    reason; any other failure an unavailable field."""
    reasons: List[str] = []
    for function, structure_name in FABRIC_FUNCTIONS:
        structure = getattr(reader.module, structure_name, None)
        if getattr(reader.module, function, None) is None or structure is None:
            reasons.append("this nvidia-ml-py lacks %s" % (structure_name if structure is None and
                                                           getattr(reader.module, function, None) else function))
            continue
        info = structure()
        ok, result = reader.attempt(function, handle, ctypes.byref(info))
        if ok:
            return describe_fabric(info, function)
        if nvml_error_code(result) == NVML_ERROR_NOT_SUPPORTED:
            return {"state": "not_supported", "function": function,
                    "reason": "NVML answers Not Supported to %s: this GPU reports no NVSwitch fabric (a GPU before Hopper, "
                              "a PCIe card, or a VM slice without the fabric)" % function}
        reasons.append("%s: %s" % (function, failure_reason(result)))
    return unavailable("the GPU fabric info could not be read: %s" % "; ".join(reasons))


def describe_fabric(info: Any, function: str) -> Dict[str, Any]:
    state_code = int(info.state)
    status_code = int(info.status)
    described: Dict[str, Any] = {
        "state": FABRIC_STATES.get(state_code, "unknown(%d)" % state_code), "state_code": state_code,
        "status": return_name(status_code), "status_code": status_code,
        "clique_id": int(info.cliqueId), "cluster_uuid": cluster_uuid(bytes(bytearray(info.clusterUuid))),
        "function": function,
    }
    if hasattr(info, "healthMask"):
        described["health_mask"] = int(info.healthMask)
        described["health"] = decode_health_mask(described["health_mask"])
    if described["state"] == "not_supported":
        described["reason"] = "NVML reports the fabric state Not Supported: this GPU is not part of an NVSwitch fabric"
    return described


def cluster_uuid(raw: bytes) -> str:
    text = raw.hex()
    return "%s-%s-%s-%s-%s" % (text[0:8], text[8:12], text[12:16], text[16:20], text[20:32])
