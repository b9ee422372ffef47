"""The devices a measurement probe runs on: every visible CUDA GPU, or the CPU when there is none."""
from __future__ import annotations

from typing import Any, Dict, List

from probelib.fields import unavailable


def measured_devices(torch: Any, requested: str = "auto") -> List[Dict[str, Any]]:
    """[{kind: cuda|cpu, index, torch_device, name, uuid, memory_total_mib}] in index order.

    requested: "auto" (every GPU, else the CPU), "cuda" (GPUs only; none is an empty list), "cpu".
    """
    if requested not in ("auto", "cuda", "cpu"):
        raise ValueError("device must be auto, cuda or cpu, not %r" % requested)
    if requested != "cpu" and torch.cuda.is_available() and torch.cuda.device_count() > 0:
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
