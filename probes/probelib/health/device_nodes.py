"""/dev/nvidia* nodes against the majors /proc/devices gives their drivers (the stale-node incident)."""
from __future__ import annotations

import errno
import os
import re
import stat
from typing import Any, Callable, Dict, List, Optional, Tuple

from probelib.fields import is_unavailable, unavailable
from probelib.health.context import HealthContext
from probelib.health.sysfs import read_text

# Names /proc/devices gives major 195: "nvidia-frontend" (older drivers), "nvidia" and "nvidiactl" (R580).
FRONTEND_DRIVERS = ("nvidia-frontend", "nvidia", "nvidiactl")
# (pattern of the path below /dev, driver names /proc/devices may give that node's major)
EXPECTED_DRIVERS: Tuple[Tuple[str, Tuple[str, ...]], ...] = (
    (r"nvidia[0-9]+", FRONTEND_DRIVERS),
    (r"nvidiactl", FRONTEND_DRIVERS),
    (r"nvidia-modeset", FRONTEND_DRIVERS + ("nvidia-modeset",)),
    (r"nvidia-uvm(-tools)?", ("nvidia-uvm",)),
    (r"nvidia-caps/.+", ("nvidia-caps",)),
    (r"nvidia-caps-imex-channels/.+", ("nvidia-caps-imex-channels",)),
    (r"nvidia-nvlink", ("nvidia-nvlink",)),
    (r"nvidia-nvswitch(ctl|[0-9]+)", ("nvidia-nvswitch",)),
)
_GPU_NODE = re.compile(r"^nvidia([0-9]+)$")


def parse_proc_devices(text: str) -> Dict[int, List[str]]:
    """The 'Character devices:' section of /proc/devices as {major: [driver names]} (a major can have several)."""
    majors: Dict[int, List[str]] = {}
    in_character = False
    for line in text.splitlines():
        stripped = line.strip()
        if stripped.endswith(":"):
            in_character = stripped == "Character devices:"
            continue
        if not in_character or not stripped:
            continue
        parts = stripped.split(None, 1)
        if len(parts) == 2 and parts[0].isdigit():
            majors.setdefault(int(parts[0]), []).append(parts[1].strip())
    return majors


def majors_by_driver(majors: Dict[int, List[str]]) -> Dict[str, List[int]]:
    by_name: Dict[str, List[int]] = {}
    for major, names in sorted(majors.items()):
        for name in names:
            by_name.setdefault(name, []).append(major)
    return by_name


def expected_drivers(relative_path: str) -> Optional[Tuple[str, ...]]:
    for pattern, drivers in EXPECTED_DRIVERS:
        if re.fullmatch(pattern, relative_path):
            return drivers
    return None


def list_nvidia_nodes(dev_root: str = "/dev") -> List[str]:
    """Paths below dev_root: nvidia*, and the contents of nvidia-caps* directories."""
    try:
        names = sorted(os.listdir(dev_root))
    except OSError:
        return []
    found = []
    for name in names:
        if not name.startswith("nvidia"):
            continue
        path = os.path.join(dev_root, name)
        if os.path.isdir(path) and not os.path.islink(path):
            try:
                found.extend("%s/%s" % (name, child) for child in sorted(os.listdir(path)))
            except OSError:
                found.append(name)
        else:
            found.append(name)
    return found


def check_node(dev_root: str, relative: str, majors: Dict[int, List[str]], by_driver: Dict[str, List[int]],
               open_test: bool, stat_fn: Callable[[str], Any] = os.stat) -> Dict[str, Any]:
    path = os.path.join(dev_root, relative)
    entry: Dict[str, Any] = {"path": path}
    try:
        info = stat_fn(path)
    except OSError as exc:
        entry.update(kind="unreadable", error="%s: %s" % (type(exc).__name__, exc.strerror or exc))
        return entry
    if not stat.S_ISCHR(info.st_mode):
        entry.update(kind="directory" if stat.S_ISDIR(info.st_mode) else "other")
        return entry
    major, minor = os.major(info.st_rdev), os.minor(info.st_rdev)
    wanted = expected_drivers(relative)
    entry.update(
        kind="char",
        major=major,
        minor=minor,
        mode="0%o" % stat.S_IMODE(info.st_mode),
        drivers_for_major=majors.get(major, []),
        expected_drivers=list(wanted) if wanted else None,
        major_matches=None if wanted is None else any(name in wanted for name in majors.get(major, [])),
        expected_majors=None if wanted is None else sorted(m for name in wanted for m in by_driver.get(name, [])),
        readable_writable=os.access(path, os.R_OK | os.W_OK),
    )
    if open_test:
        entry["open_rw"] = try_open(path)
    return entry


def try_open(path: str) -> str:
    """'ok' or the errno name; a device cgroup (v1 or v2) that denies the node gives EPERM here."""
    try:
        fd = os.open(path, os.O_RDWR | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    except OSError as exc:
        return errno.errorcode.get(exc.errno, str(exc.errno)) if exc.errno else str(exc)
    os.close(fd)
    return "ok"


def mismatch_sentence(entry: Dict[str, Any]) -> str:
    drivers = "/".join(entry["expected_drivers"])
    found = "/".join(entry["drivers_for_major"]) or "no driver"
    if not entry["expected_majors"]:
        return ("%s has major %d, but /proc/devices has no %s driver: its kernel module is not loaded "
                "(modprobe it, e.g. nvidia-modprobe -u -c=0)" % (entry["path"], entry["major"], drivers))
    return ("%s has major %d (%s in /proc/devices) but %s now has major %s: the node is stale (made before a "
            "kernel or driver change); recreate it and update any container device rules that allow the old major"
            % (entry["path"], entry["major"], found,
               drivers, ", ".join(str(m) for m in entry["expected_majors"])))


# (node below /dev that CUDA opens, the driver whose registration means the node should exist)
REQUIRED_NODES = (("nvidiactl", FRONTEND_DRIVERS), ("nvidia-uvm", ("nvidia-uvm",)))


def missing_nodes(relative_paths: List[str], by_driver: Dict[str, List[int]]) -> List[Dict[str, str]]:
    missing = []
    for node, drivers in REQUIRED_NODES:
        registered = [name for name in drivers if name in by_driver]
        if registered and node not in relative_paths:
            missing.append({"path": "/dev/%s" % node, "sentence": (
                "/dev/%s is missing although /proc/devices registers %s (major %s): CUDA cannot initialise "
                "without it; create it (nvidia-modprobe -u -c=0) or pass it into the container" % (
                    node, registered[0], by_driver[registered[0]][0]))})
    return missing


def collect_device_nodes(context: HealthContext, stat_fn: Callable[[str], Any] = os.stat) -> Dict[str, Any]:
    roots = context.roots
    try:
        majors = parse_proc_devices(read_text(os.path.join(roots.proc, "devices")))
        majors_field: Any = {str(major): names for major, names in sorted(majors.items())
                             if any("nvidia" in name for name in names)}
    except OSError as exc:
        majors = {}
        majors_field = unavailable("/proc/devices could not be read: %s" % (exc.strerror or exc))
    by_driver = majors_by_driver(majors)
    open_test = bool(context.params.get("device_open_test", True))
    nodes = [check_node(roots.dev, relative, majors, by_driver, open_test, stat_fn)
             for relative in list_nvidia_nodes(roots.dev)]
    mismatches = [{"path": node["path"], "sentence": mismatch_sentence(node)}
                  for node in nodes if node.get("major_matches") is False and not is_unavailable(majors_field)]
    gpu_nodes = sorted(int(_GPU_NODE.match(os.path.basename(n["path"])).group(1)) for n in nodes
                       if n.get("kind") == "char" and _GPU_NODE.match(os.path.basename(n["path"])))
    nvml_count = context.nvml.device_count
    return {
        "missing_nodes": missing_nodes([os.path.relpath(n["path"], roots.dev) for n in nodes], by_driver),
        "proc_devices_nvidia_majors": majors_field,
        "nodes": nodes,
        "mismatches": mismatches,
        "gpu_node_count": len(gpu_nodes),
        "gpu_node_minors": gpu_nodes,
        "nvml_gpu_count": nvml_count,
        "gpu_node_count_matches_nvml": (len(gpu_nodes) == nvml_count) if isinstance(nvml_count, int)
        else nvml_count,
    }
