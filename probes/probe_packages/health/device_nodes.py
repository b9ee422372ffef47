"""/dev/nvidia* nodes against the majors /proc/devices gives their drivers (the stale-node incident)."""
from __future__ import annotations

import errno
import os
import re
import stat
from dataclasses import dataclass
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple

from probelib.fields import is_unavailable, unavailable
from probelib.nvml.context import ReadContext
from probelib.system.roots import SystemRoots
from probelib.system.sysfs import read_text

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
               stat_fn: Callable[[str], Any] = os.stat) -> Dict[str, Any]:
    """One node, by stat alone (nothing is opened): its numbers and mode against the drivers /proc/devices gives."""
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
    return entry


def add_open_test(nodes: List[Dict[str, Any]]) -> None:
    """open_rw on every character node. It runs once NVML is open, where it always ran: opening creates no node,
    but it is no pure listing either (it wakes a GPU without persistence mode), so the reading as found stays stat
    alone; for a node NVML re-created, open_rw answers for the re-created node (see after_init.changes)."""
    for entry in nodes:
        if entry.get("kind") == "char":
            entry["open_rw"] = try_open(entry["path"])


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


@dataclass
class NodeReading:
    """One look at /proc/devices and /dev/nvidia*, by listing and stat alone."""

    majors: Dict[int, List[str]]
    majors_field: Any
    nodes: List[Dict[str, Any]]


def read_proc_devices(proc_root: str) -> Tuple[Dict[int, List[str]], Any]:
    """(/proc/devices as {major: names}, its NVIDIA majors as the data records them or why it could not be read)."""
    try:
        majors = parse_proc_devices(read_text(os.path.join(proc_root, "devices")))
    except OSError as exc:
        return {}, unavailable("/proc/devices could not be read: %s" % (exc.strerror or exc))
    return majors, {str(major): names for major, names in sorted(majors.items())
                    if any("nvidia" in name for name in names)}


def read_nodes(roots: SystemRoots, stat_fn: Callable[[str], Any] = os.stat) -> NodeReading:
    majors, majors_field = read_proc_devices(roots.proc)
    by_driver = majors_by_driver(majors)
    nodes = [check_node(roots.dev, relative, majors, by_driver, stat_fn) for relative in list_nvidia_nodes(roots.dev)]
    return NodeReading(majors, majors_field, nodes)


def read_device_nodes(roots: SystemRoots, stat_fn: Callable[[str], Any] = os.stat) -> Dict[str, Any]:
    """The device_nodes section as found, before anything loads NVML or CUDA: as root their initialisation
    re-creates stale nodes. collect_device_nodes adds the open test and NVML's GPU count once NVML is open."""
    reading = read_nodes(roots, stat_fn)
    nodes = reading.nodes
    mismatches = [{"path": node["path"], "sentence": mismatch_sentence(node)}
                  for node in nodes if node.get("major_matches") is False and not is_unavailable(reading.majors_field)]
    gpu_nodes = sorted(int(_GPU_NODE.match(os.path.basename(n["path"])).group(1)) for n in nodes
                       if n.get("kind") == "char" and _GPU_NODE.match(os.path.basename(n["path"])))
    return {
        "missing_nodes": missing_nodes([os.path.relpath(n["path"], roots.dev) for n in nodes],
                                       majors_by_driver(reading.majors)),
        "proc_devices_nvidia_majors": reading.majors_field,
        "nodes": nodes,
        "mismatches": mismatches,
        "gpu_node_count": len(gpu_nodes),
        "gpu_node_minors": gpu_nodes,
        "probe_ran_as_root": os.geteuid() == 0,
    }


def nvml_comparison(gpu_node_count: int, nvml_count: Any) -> Dict[str, Any]:
    return {
        "nvml_gpu_count": nvml_count,
        "gpu_node_count_matches_nvml": (gpu_node_count == nvml_count) if isinstance(nvml_count, int) else nvml_count,
    }


def collect_device_nodes(context: ReadContext, stat_fn: Callable[[str], Any] = os.stat,
                         as_found: Any = None) -> Any:
    """The nodes as found (read now unless as_found is given), with the open test and NVML's GPU count added."""
    section = as_found if as_found is not None else read_device_nodes(context.roots, stat_fn)
    if is_unavailable(section):
        return section
    if context.params.get("device_open_test", True):
        add_open_test(section["nodes"])
    section.update(nvml_comparison(section["gpu_node_count"], context.nvml.device_count))
    return section


# ------------------------------------------------------------------ the second reading, after NVML and CUDA init

NODE_STATE_FIELDS = ("kind", "major", "minor", "mode")
AFTER_INIT = "after NVML/CUDA initialised"


def read_after_init(roots: SystemRoots, as_found_nodes: List[Dict[str, Any]], as_root: bool,
                    stat_fn: Callable[[str], Any] = os.stat) -> Dict[str, Any]:
    """device_nodes.after_init: the nodes read again, and every node that changed since the first reading."""
    reading = read_nodes(roots, stat_fn)
    return {
        "proc_devices_nvidia_majors": reading.majors_field,
        "nodes": reading.nodes,
        "changes": node_changes(as_found_nodes, reading.nodes, as_root),
    }


def node_state(entry: Dict[str, Any]) -> Dict[str, Any]:
    return {key: entry[key] for key in NODE_STATE_FIELDS if key in entry}


def node_changes(before_nodes: List[Dict[str, Any]], after_nodes: List[Dict[str, Any]],
                 as_root: bool) -> List[Dict[str, Any]]:
    before = {entry["path"]: node_state(entry) for entry in before_nodes}
    after = {entry["path"]: node_state(entry) for entry in after_nodes}
    changes = []
    for path in sorted(set(before) | set(after)):
        change = describe_change(path, before.get(path), after.get(path))
        if change is not None:
            change["sentence"] = change_sentence(change, as_root)
            changes.append(change)
    return changes


def describe_change(path: str, before: Optional[Dict[str, Any]],
                    after: Optional[Dict[str, Any]]) -> Optional[Dict[str, Any]]:
    if before == after:
        return None
    if before is None:
        kind, fields = "appeared", []
    elif after is None:
        kind, fields = "vanished", []
    else:
        kind, fields = "changed", [key for key in NODE_STATE_FIELDS if before.get(key) != after.get(key)]
    return {"path": path, "change": kind, "changed_fields": fields, "before": before, "after": after}


def change_sentence(change: Dict[str, Any], as_root: bool) -> str:
    """'/dev/nvidia-uvm was major 504 when the probe started and 238 after NVML/CUDA initialised: re-created ...'"""
    path, before, after = change["path"], change["before"], change["after"]
    if change["change"] == "appeared":
        what = "%s was missing when the probe started and appeared (%s) %s" % (path, _state_words(after), AFTER_INIT)
    elif change["change"] == "vanished":
        what = "%s existed (%s) when the probe started and was gone %s" % (path, _state_words(before), AFTER_INIT)
    elif len(change["changed_fields"]) == 1:
        field_name = change["changed_fields"][0]
        what = "%s was %s %s when the probe started and %s %s" % (
            path, field_name, before.get(field_name, "none"), after.get(field_name, "none"), AFTER_INIT)
    else:
        what = "%s was %s when the probe started and %s %s" % (
            path, _state_words(before, change["changed_fields"]), _state_words(after, change["changed_fields"]),
            AFTER_INIT)
    return "%s: %s" % (what, _change_cause(change, as_root))


def _state_words(state: Dict[str, Any], fields: Sequence[str] = ()) -> str:
    if not fields:
        if state.get("kind") != "char":
            return "a %s node" % state.get("kind")
        fields = ("major", "minor", "mode")
    return ", ".join("%s %s" % (name, state.get(name, "none")) for name in fields)


def _change_cause(change: Dict[str, Any], as_root: bool) -> str:
    if change["change"] == "vanished":
        return "removed while the probe ran%s: a program started now finds no node" % (" as root" if as_root else "")
    verb = "created" if change["change"] == "appeared" else "re-created"
    if as_root:
        cause = ("%s by the driver while the probe ran as root: a container or a non-root user gets no such repair"
                 % verb)
    else:
        cause = "%s while the probe ran as a non-root user, by another process (nvidia-modprobe or udev)" % verb
    major = (change["after"] or {}).get("major")
    if isinstance(major, int) and (change["change"] == "appeared" or "major" in change["changed_fields"]):
        cause += "; its device rules must allow major %d" % major
    return cause
