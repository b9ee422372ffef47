"""health: what a node is before anything loads it (device nodes, cgroup, CUDA init, NVML state)."""
from __future__ import annotations

from typing import Any, Dict, List

from ...probe_kit.kit import (
    MachineDeclaration, Metric, Setting, MISSING, dig, is_unavailable, number_or_none, ProbeJudging)
from .checks import HEALTH_CHECKS
from .firmware_checks import FIRMWARE_CHECKS
from .firmware_parts import firmware_settings
from .kernel_log_checks import KERNEL_LOG_CHECKS
from .machine_drift import DRIFT_CHECK_IDS, machine_drift
from .metrics import CUDA_INIT, IDLE_POWER, MEMORY_USED, TEMPERATURE
from .nvlink_checks import NVLINK_CHECKS
from .summaries import SUMMARY_CHECKS
from .machine_facts import EXPECTED_GPUS_CHECK, NOT_RUN_COLUMNS, expected_gpus, index_columns, machine_facts
from .throttle_checks import THROTTLE_CHECKS


def health_metrics(data: Dict[str, Any]) -> List[Metric]:
    """Idle power draw (W), temperature (C) and memory used (MiB) per GPU, CUDA init duration (s) per host."""
    metrics: List[Metric] = []
    gpus = data.get("gpus")
    for gpu in gpus if isinstance(gpus, list) else []:
        uuid = gpu.get("uuid") if isinstance(gpu.get("uuid"), str) else None
        index = gpu.get("index") if isinstance(gpu.get("index"), int) else None
        if uuid is None:
            continue
        for spec, section, key in ((IDLE_POWER, "power", "draw_w"), (TEMPERATURE, "temperature", "gpu_c"),
                                   (MEMORY_USED, "memory", "used_mib")):
            part = gpu.get(section)
            value = number_or_none(part.get(key)) if isinstance(part, dict) and not is_unavailable(part) else None
            if value is not None:
                metrics.append(Metric.of(spec, uuid, index, value))
    init = data.get("cuda_init")
    if isinstance(init, dict) and init.get("ok"):
        duration = number_or_none(init.get("duration_s"))
        if duration is not None:
            metrics.append(Metric.of(CUDA_INIT, None, None, duration))
    return metrics


# (setting id, where in the data, words): the drift check of each is drift.<setting id>.
VERSION_SETTINGS = (
    ("driver_version", ("software", "driver_version"), "driver version"),
    ("cuda_driver_version", ("software", "cuda_driver_version"), "CUDA driver version"),
    ("kernel_release", ("platform", "kernel_release"), "kernel"),
    ("torch_version", ("cuda_init", "torch_version"), "torch version"),
    ("torch_cuda_version", ("cuda_init", "torch_cuda_version"), "torch's CUDA build"),
    ("nccl_version", ("cuda_init", "nccl_version"), "NCCL version"),
    ("kernel_cmdline", ("platform", "cmdline"), "kernel command line"),
)
# Every host's command line has its own root= and BOOT_IMAGE=: not held to the SKU's majority (tuning's
# cmdline_settings are).
OWN_PER_HOST = ("kernel_cmdline",)


def health_settings(data: Dict[str, Any]) -> List[Setting]:
    """The versions a workload depends on, the kernel command line and the GPUs' firmware."""
    return [Setting(setting_id, words, value, fleet_compared=setting_id not in OWN_PER_HOST)
            for setting_id, path, words in VERSION_SETTINGS for value in (dig(data, *path),) if value is not MISSING] + \
        firmware_settings(data)


JUDGING = ProbeJudging(
    checks={**HEALTH_CHECKS, **NVLINK_CHECKS, **KERNEL_LOG_CHECKS, **FIRMWARE_CHECKS, **THROTTLE_CHECKS, **SUMMARY_CHECKS},
    metrics=health_metrics,
    settings=health_settings,
    machine=MachineDeclaration(facts=machine_facts, expected_gpus=expected_gpus, expected_gpus_check=EXPECTED_GPUS_CHECK,
                               drift=machine_drift, drift_check_ids=DRIFT_CHECK_IDS, index_columns=index_columns,
                               not_run_columns=NOT_RUN_COLUMNS),
)
