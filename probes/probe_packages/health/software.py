"""Driver-side versions: NVIDIA driver, the CUDA version it supports, NVML, the kernel module, nvidia-ml-py."""
from __future__ import annotations

import os
from typing import Any, Dict

from probelib.fields import read_field, unavailable
from probelib.nvml.access import package_version
from probelib.nvml.context import ReadContext
from probelib.system.sysfs import read_stripped


def format_cuda_version(encoded: int) -> str:
    """NVML's 13000 -> '13.0', 12040 -> '12.4'."""
    return "%d.%d" % (encoded // 1000, (encoded % 1000) // 10)


def collect_software(context: ReadContext) -> Dict[str, Any]:
    nvml = context.nvml
    kernel_module = read_field(
        lambda: read_stripped(os.path.join(context.roots.sys, "module", "nvidia", "version")),
        "/sys/module/nvidia/version (the nvidia kernel module is not loaded)")
    software: Dict[str, Any] = {
        "nvml_initialized": nvml.initialized,
        "nvml_reason": nvml.reason if nvml.reason else None,
        "nvidia_ml_py_version": package_version("nvidia-ml-py") if nvml.module is not None
        else unavailable(nvml.reason),
        "kernel_module_version": kernel_module,
    }
    if not nvml.initialized:
        for key in ("driver_version", "cuda_driver_version", "nvml_version"):
            software[key] = unavailable(nvml.reason)
        return software
    reader = nvml.reader
    software["driver_version"] = reader.value("nvmlSystemGetDriverVersion")
    cuda_version, unused_function = reader.first_value(
        ["nvmlSystemGetCudaDriverVersion_v2", "nvmlSystemGetCudaDriverVersion"], convert=format_cuda_version)
    software["cuda_driver_version"] = cuda_version
    software["nvml_version"] = reader.value("nvmlSystemGetNVMLVersion")
    return software
