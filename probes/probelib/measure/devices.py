"""The devices a measurement probe runs on: every visible CUDA GPU, or the CPU on a host without NVIDIA GPUs.

A host whose NVIDIA GPUs CUDA cannot see (CUDA_VISIBLE_DEVICES hides them, torch is a CPU build, the driver is not
loaded) is an error, never a CPU measurement in their place.
"""
from __future__ import annotations

import os
from typing import Any, Dict, List

from probelib.fields import unavailable
from probelib.measure.host_gpus import HostGpus, read_host_gpus
from probelib.nvml.access import NO_KERNEL_MODULE
from probelib.runner import ProbeError

GPU_PROBES_RULE = "the GPU probes measure GPUs, never the CPU in their place"


class GpuHiddenError(ProbeError):
    """The host has NVIDIA GPUs and CUDA sees none of them; the message names the mismatch and what to do."""


def cuda_device_count(torch: Any) -> int:
    """The CUDA GPUs torch sees (0 when CUDA is not available)."""
    return int(torch.cuda.device_count()) if torch.cuda.is_available() else 0


def refuse_hidden_gpus(torch: Any) -> None:
    """Raise GpuHiddenError when torch sees no CUDA GPU on a host that has NVIDIA GPUs."""
    if cuda_device_count(torch) > 0:
        return
    host = read_host_gpus()
    if host.count > 0:
        raise GpuHiddenError(hidden_gpus_reason(host, os.environ.get("CUDA_VISIBLE_DEVICES"), torch.version.cuda),
                             {"host_gpu_count": host.count, "host_gpu_source": host.source,
                              "nvidia_kernel_module_loaded": host.kernel_module_loaded, "cuda_device_count": 0})


def hidden_gpus_reason(host: HostGpus, visible: Any, torch_cuda: Any) -> str:
    """The mismatch in one sentence: what the host has, that CUDA sees none, why where known, and what to do.
    visible: CUDA_VISIBLE_DEVICES (None when unset), the one environment value a result may carry; torch_cuda:
    torch.version.cuda (None on a CPU build)."""
    if host.source == "pci" and not host.kernel_module_loaded:
        return ("%d NVIDIA GPU(s) on the PCI bus but %s, so CUDA sees 0: %s; load the NVIDIA driver (modprobe nvidia; "
                "dmesg says why it did not load) or run the health probe" % (host.count, NO_KERNEL_MODULE, GPU_PROBES_RULE))
    has = {"nvml": "NVML lists %d NVIDIA GPU(s)", "proc": "the NVIDIA kernel module knows %d GPU(s)",
           "pci": "%d NVIDIA GPU(s) on the PCI bus"}[host.source] % host.count
    why = ["CUDA_VISIBLE_DEVICES is unset" if visible is None else "CUDA_VISIBLE_DEVICES=%r" % visible]
    remedy = ("unset or fix CUDA_VISIBLE_DEVICES, or run the health probe for why CUDA cannot use them"
              if visible is not None else "run the health probe for why CUDA cannot use them")
    if not torch_cuda:
        why.append("torch is a CPU build")
        remedy = "set gpufleet_python to a Python with a CUDA build of torch, or %s" % remedy
    return "%s but CUDA sees 0 (%s): %s; %s" % (has, "; ".join(why), GPU_PROBES_RULE, remedy)


def measured_devices(torch: Any, requested: str = "auto") -> List[Dict[str, Any]]:
    """[{kind: cuda|cpu, index, torch_device, name, uuid, memory_total_mib}] in index order.

    requested: "auto" (every GPU, else the CPU), "cuda" (GPUs only; none is an empty list), "cpu". With auto or cuda,
    a host whose NVIDIA GPUs CUDA cannot see raises GpuHiddenError; where CUDA sees some of them (a deliberate
    CUDA_VISIBLE_DEVICES), those are measured.
    """
    if requested not in ("auto", "cuda", "cpu"):
        raise ValueError("device must be auto, cuda or cpu, not %r" % requested)
    if requested != "cpu":
        refuse_hidden_gpus(torch)
    if requested != "cpu" and cuda_device_count(torch) > 0:
        devices = []
        for index in range(torch.cuda.device_count()):
            properties = torch.cuda.get_device_properties(index)
            uuid = getattr(properties, "uuid", None)
            devices.append({
                "kind": "cuda", "index": index, "torch_device": "cuda:%d" % index, "name": properties.name,
                "uuid": ("GPU-%s" % uuid) if uuid is not None else unavailable("this torch does not expose the GPU UUID"),
                "memory_total_mib": int(properties.total_memory // 2 ** 20),
                "compute_capability": "%d.%d" % (properties.major, properties.minor),
            })
        return devices
    if requested == "cuda":
        return []
    return [{"kind": "cpu", "index": 0, "torch_device": "cpu", "name": _cpu_name(),
             "uuid": unavailable("a CPU has no UUID"), "memory_total_mib": _memory_total_mib(),
             "compute_capability": unavailable("not a GPU")}]


def free_memory_bytes(torch: Any, device: Dict[str, Any]) -> int:
    if device["kind"] == "cuda":
        free, unused_total = torch.cuda.mem_get_info(device["index"])
        return int(free)
    return _available_memory_bytes()


def _cpu_name() -> str:
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as handle:
            for line in handle:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return "CPU"


def _meminfo_kib(field: str) -> int:
    with open("/proc/meminfo", encoding="utf-8") as handle:
        for line in handle:
            if line.startswith(field + ":"):
                return int(line.split()[1])
    raise ValueError("no %s in /proc/meminfo" % field)


def _memory_total_mib() -> Any:
    try:
        return _meminfo_kib("MemTotal") // 1024
    except (OSError, ValueError) as exc:
        return unavailable("/proc/meminfo unreadable: %s" % exc)


def _available_memory_bytes() -> int:
    return _meminfo_kib("MemAvailable") * 1024
