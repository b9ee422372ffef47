"""Processes running on a GPU (compute and graphics), named from /proc/<pid>/comm."""
from __future__ import annotations

import os
from typing import Any, Dict, List

from probelib.fields import unavailable
from probelib.nvml.access import NvmlReader, failure_reason, nvml_error_code
from probelib.system.sysfs import read_stripped

MIB = 1 << 20


def process_name(pid: int, proc_root: str = "/proc") -> Any:
    try:
        return read_stripped(os.path.join(proc_root, str(pid), "comm"))
    except FileNotFoundError:
        return unavailable("pid %d is not visible here (another PID namespace, e.g. a container, or it exited)" % pid)
    except OSError as exc:
        return unavailable("/proc/%d/comm could not be read: %s" % (pid, exc.strerror or exc))


def read_processes(reader: NvmlReader, handle: Any, kind: str, proc_root: str = "/proc") -> Any:
    """kind is 'Compute' or 'Graphics'."""
    base = "nvmlDeviceGet%sRunningProcesses" % kind
    reasons = []
    for function in (base, base + "_v3", base + "_v2"):
        ok, result = reader.attempt(function, handle)
        if ok:
            return [describe_process(entry, proc_root) for entry in result]
        reasons.append(failure_reason(result))
        code = nvml_error_code(result)
        if code is not None and code != 13:
            break
    return unavailable("; ".join(reasons))


def describe_process(entry: Any, proc_root: str) -> Dict[str, Any]:
    pid = int(entry.pid)
    used = getattr(entry, "usedGpuMemory", None)
    return {
        "pid": pid,
        "name": process_name(pid, proc_root),
        "used_memory_mib": round(used / MIB, 1) if isinstance(used, int)
        else unavailable("NVML does not report this process's memory"),
    }


def collect_processes(reader: NvmlReader, handle: Any, proc_root: str = "/proc") -> Dict[str, List[Any]]:
    return {
        "compute": read_processes(reader, handle, "Compute", proc_root),
        "graphics": read_processes(reader, handle, "Graphics", proc_root),
    }
