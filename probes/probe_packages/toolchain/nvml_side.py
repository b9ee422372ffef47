"""What NVML says: the driver version, the CUDA version it supports, and per GPU its UUID and persistence mode."""
from __future__ import annotations

from typing import Any, Dict, List

from probelib.fields import is_unavailable, unavailable
from probelib.nvml.access import NvmlSession


def read_nvml(session: NvmlSession) -> Dict[str, Any]:
    """{initialized, problem, driver_version, cuda_driver_code (int or None), cuda_function, cuda_problem, devices}.

    devices is None when NVML cannot list GPUs; each device is {index, uuid (None if unread), persistence_mode,
    mig_enabled (MIG mode currently on; false where NVML cannot say)}."""
    result: Dict[str, Any] = {"initialized": session.initialized, "problem": session.reason or None,
                              "driver_version": unavailable(session.reason or "NVML is not usable"),
                              "cuda_driver_code": None, "cuda_function": None,
                              "cuda_problem": session.reason or "NVML is not usable", "devices": None}
    if not session.initialized:
        return result
    reader = session.reader
    result["driver_version"] = reader.value("nvmlSystemGetDriverVersion")
    code, function = reader.first_value(["nvmlSystemGetCudaDriverVersion_v2", "nvmlSystemGetCudaDriverVersion"])
    if isinstance(code, int) and not isinstance(code, bool):
        result["cuda_driver_code"], result["cuda_function"], result["cuda_problem"] = code, function, None
    else:
        result["cuda_problem"] = "nvmlSystemGetCudaDriverVersion: %s" % (
            code["unavailable"] if is_unavailable(code) else "returned %r" % (code,))
    if not isinstance(session.device_count, int):
        return result
    devices: List[Dict[str, Any]] = []
    for index in range(session.device_count):
        handle = session.handles[index] if index < len(session.handles) else None
        if handle is None:
            why = session.handle_failures.get(index, "no NVML handle")
            devices.append({"index": index, "uuid": None, "persistence_mode": unavailable(why), "mig_enabled": False})
            continue
        uuid = reader.value("nvmlDeviceGetUUID", handle)
        ok, mig = reader.attempt("nvmlDeviceGetMigMode", handle)  # (current, pending); not supported off A100/H100-class
        devices.append({"index": index, "uuid": uuid if isinstance(uuid, str) else None,
                        "persistence_mode": reader.value("nvmlDeviceGetPersistenceMode", handle),
                        "mig_enabled": bool(ok and isinstance(mig, (list, tuple)) and mig and mig[0] == 1)})
    result["devices"] = devices
    return result
