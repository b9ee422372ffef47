"""The host around the GPUs: kernel, OS, CPU, memory, NUMA, cpufreq, container and IOMMU hints."""
from __future__ import annotations

import glob
import os
import platform
import socket
from collections import Counter
from typing import Any, Dict, List, Mapping, Optional

from probelib.fields import read_field, unavailable
from probelib.nvml.context import ReadContext
from probelib.secret_shapes import shown_environment
from probelib.system.roots import SystemRoots
from probelib.system.sysfs import parse_cpulist, read_int, read_stripped, read_text

ALLOWED_ENVIRONMENT_NAMES = ("CUDA_VISIBLE_DEVICES", "NVIDIA_VISIBLE_DEVICES", "CUDA_DEVICE_ORDER")
ALLOWED_ENVIRONMENT_PREFIXES = ("NCCL_",)
IOMMU_CMDLINE_KEYS = ("intel_iommu", "amd_iommu", "iommu", "iommu.passthrough", "iommu.strict")
CONTAINER_CGROUP_HINTS = (
    ("kubepods", "kubernetes"), ("docker", "docker"), ("libpod", "podman"), ("lxc", "lxc"),
    ("containerd", "containerd"), ("crio", "cri-o"),
)


def collect_platform(context: ReadContext) -> Dict[str, Any]:
    roots = context.roots
    uname = platform.uname()
    cmdline = read_field(lambda: read_stripped(os.path.join(roots.proc, "cmdline")), "/proc/cmdline")
    return {
        "hostname": socket.gethostname(),
        "kernel_release": uname.release,
        "kernel_version": uname.version,
        "architecture": uname.machine,
        "cmdline": cmdline,
        "os_release": read_field(lambda: read_os_release(roots.etc), "/etc/os-release"),
        "cpu": read_field(lambda: read_cpu(roots.proc), "/proc/cpuinfo"),
        "memory_total_mib": read_field(lambda: read_memory_total_mib(roots.proc), "/proc/meminfo"),
        "numa_nodes": read_field(lambda: read_numa_nodes(roots.sys), "/sys/devices/system/node"),
        "numa_balancing": read_field(
            lambda: read_int(os.path.join(roots.proc, "sys", "kernel", "numa_balancing")),
            "/proc/sys/kernel/numa_balancing"),
        "cpufreq": read_field(lambda: read_cpufreq(roots.sys), "cpufreq in /sys"),
        "container": read_field(lambda: detect_container(roots), "container hints"),
        "iommu": read_field(lambda: read_iommu(cmdline, roots.sys), "IOMMU hints"),
        "relevant_environment": relevant_environment(os.environ),
    }


def relevant_environment(environ: Mapping[str, str]) -> Dict[str, str]:
    """Only the allow-listed variables; no other environment value is ever recorded, and a credential-shaped value
    of one of them only as set (secret_shapes)."""
    return shown_environment({name: value for name, value in sorted(environ.items())
                              if name in ALLOWED_ENVIRONMENT_NAMES or name.startswith(ALLOWED_ENVIRONMENT_PREFIXES)})


def parse_os_release(text: str) -> Dict[str, str]:
    values: Dict[str, str] = {}
    for line in text.splitlines():
        line = line.strip()
        if not line or line.startswith("#") or "=" not in line:
            continue
        key, value = line.split("=", 1)
        value = value.strip()
        if len(value) >= 2 and value[0] == value[-1] and value[0] in "\"'":
            value = value[1:-1]
        values[key.strip()] = value
    return {key: values[key] for key in ("ID", "VERSION_ID", "PRETTY_NAME") if key in values}


def read_os_release(etc_root: str) -> Dict[str, str]:
    for path in (os.path.join(etc_root, "os-release"), os.path.join(etc_root, "..", "usr", "lib", "os-release")):
        if os.path.exists(path):
            return parse_os_release(read_text(path))
    raise FileNotFoundError("no os-release file under %s" % etc_root)


def read_cpu(proc_root: str) -> Dict[str, Any]:
    model: Optional[str] = None
    logical = 0
    sockets = set()
    for line in read_text(os.path.join(proc_root, "cpuinfo"), 8 << 20).splitlines():
        key, unused_separator, value = line.partition(":")
        key = key.strip()
        if key == "processor":
            logical += 1
        elif key in ("model name", "Model name", "cpu model") and model is None:
            model = value.strip()
        elif key == "physical id":
            sockets.add(value.strip())
    usable = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    return {
        "model": model if model else unavailable("/proc/cpuinfo names no CPU model"),
        "logical_count": logical or (os.cpu_count() or 0),
        "usable_count": usable,
        "socket_count": len(sockets) if sockets else unavailable("/proc/cpuinfo has no physical id"),
    }


def read_memory_total_mib(proc_root: str) -> int:
    for line in read_text(os.path.join(proc_root, "meminfo")).splitlines():
        if line.startswith("MemTotal:"):
            return int(line.split()[1]) // 1024
    raise ValueError("MemTotal missing from /proc/meminfo")


def read_numa_nodes(sys_root: str) -> List[Dict[str, Any]]:
    nodes = []
    base = os.path.join(sys_root, "devices", "system", "node")
    for path in sorted(glob.glob(os.path.join(base, "node[0-9]*")), key=lambda p: int(p.rsplit("node", 1)[1])):
        node = int(os.path.basename(path)[4:])
        cpulist = read_field(lambda: read_stripped(os.path.join(path, "cpulist")), "cpulist of node %d" % node)
        nodes.append({
            "node": node,
            "cpulist": cpulist,
            "cpu_count": len(parse_cpulist(cpulist)) if isinstance(cpulist, str) else cpulist,
            "memory_total_mib": read_field(lambda: _node_memory_mib(path), "meminfo of node %d" % node),
        })
    if not nodes:
        raise FileNotFoundError("no node directories under %s" % base)
    return nodes


def _node_memory_mib(node_dir: str) -> int:
    for line in read_text(os.path.join(node_dir, "meminfo")).splitlines():
        if "MemTotal:" in line:
            return int(line.split("MemTotal:")[1].split()[0]) // 1024
    raise ValueError("MemTotal missing")


def read_cpufreq(sys_root: str) -> Dict[str, Any]:
    cpu_dirs = glob.glob(os.path.join(sys_root, "devices", "system", "cpu", "cpu[0-9]*", "cpufreq"))
    if not cpu_dirs:
        return unavailable("no cpufreq directory in /sys (a VM, a container without it, or no cpufreq driver)")
    drivers: Counter = Counter()
    governors: Counter = Counter()
    for directory in cpu_dirs:
        for name, counter in (("scaling_driver", drivers), ("scaling_governor", governors)):
            try:
                counter[read_stripped(os.path.join(directory, name))] += 1
            except OSError:
                counter["unreadable"] += 1
    return {"cpu_count": len(cpu_dirs), "drivers": dict(sorted(drivers.items())),
            "governors": dict(sorted(governors.items()))}


def detect_container(roots: SystemRoots) -> Dict[str, Any]:
    hints: List[str] = []
    kinds: List[str] = []
    if os.path.exists(os.path.join(roots.root, ".dockerenv")):
        hints.append("/.dockerenv exists")
        kinds.append("docker")
    if os.path.exists(os.path.join(roots.root, "run", ".containerenv")):
        hints.append("/run/.containerenv exists")
        kinds.append("podman")
    try:
        pid1_cgroup = read_text(os.path.join(roots.proc, "1", "cgroup"))
    except OSError:
        pid1_cgroup = ""
    for needle, kind in CONTAINER_CGROUP_HINTS:
        if needle in pid1_cgroup:
            hints.append("/proc/1/cgroup mentions %s" % needle)
            kinds.append(kind)
    root_fs = _root_filesystem_type(roots.proc)
    if root_fs in ("overlay", "fuse-overlayfs", "aufs"):
        hints.append("/ is an %s mount" % root_fs)
    kind_counts = Counter(kinds)
    return {
        "in_container": bool(hints),
        "kind": kind_counts.most_common(1)[0][0] if kind_counts else ("unknown" if hints else "none"),
        "hints": hints,
        "root_filesystem_type": root_fs if root_fs else unavailable("/ is not in /proc/self/mountinfo"),
    }


def _root_filesystem_type(proc_root: str) -> Optional[str]:
    try:
        text = read_text(os.path.join(proc_root, "self", "mountinfo"), 4 << 20)
    except OSError:
        return None
    root_type = None
    for line in text.splitlines():
        before, unused_separator, after = line.partition(" - ")
        fields = before.split()
        if len(fields) >= 5 and fields[4] == "/" and after:
            root_type = after.split()[0]
    return root_type


def parse_iommu_cmdline(cmdline: str) -> Dict[str, str]:
    found = {}
    for token in cmdline.split():
        key, unused_separator, value = token.partition("=")
        if key in IOMMU_CMDLINE_KEYS:
            found[key] = value
    return found


def read_iommu(cmdline: Any, sys_root: str) -> Dict[str, Any]:
    groups_dir = os.path.join(sys_root, "kernel", "iommu_groups")
    try:
        group_count: Any = len(os.listdir(groups_dir))
    except OSError as exc:
        group_count = unavailable("%s could not be listed: %s" % (groups_dir, exc.strerror or exc))
    return {
        "cmdline_options": parse_iommu_cmdline(cmdline) if isinstance(cmdline, str) else cmdline,
        "iommu_group_count": group_count,
    }
