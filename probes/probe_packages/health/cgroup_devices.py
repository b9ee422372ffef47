"""The device cgroup allow-list (cgroup v1 devices.list) and whether it admits each NVIDIA major."""
from __future__ import annotations

import os
from typing import Any, Dict, List, Optional, Tuple

from probe_packages.health.device_nodes import parse_proc_devices
from probelib.fields import unavailable
from probelib.nvml.context import ReadContext
from probelib.system.sysfs import read_text

CGROUP_V2_REASON = ("cgroup v2 enforces device access with an eBPF program attached to the cgroup; there is no "
                    "allow-list file to read (see device_nodes.nodes[].open_rw for what is actually allowed)")


def parse_proc_self_cgroup(text: str) -> List[Dict[str, Any]]:
    entries = []
    for line in text.splitlines():
        parts = line.strip().split(":", 2)
        if len(parts) != 3:
            continue
        hierarchy, controllers, path = parts
        entries.append({"hierarchy": hierarchy, "controllers": [c for c in controllers.split(",") if c],
                        "path": path})
    return entries


def parse_devices_list(text: str) -> List[Dict[str, Any]]:
    """'c 195:* rwm' -> {"type": "c", "major": 195, "minor": "*", "access": "rwm"}; majors/minors '*' stay strings."""
    rules = []
    for line in text.splitlines():
        parts = line.split()
        if len(parts) != 3 or ":" not in parts[1]:
            continue
        kind, numbers, access = parts
        major, minor = numbers.split(":", 1)
        rules.append({"type": kind, "major": _number_or_star(major), "minor": _number_or_star(minor),
                      "access": access})
    return rules


def _number_or_star(text: str) -> Any:
    return int(text) if text.isdigit() else "*"


def device_allowed(rules: List[Dict[str, Any]], major: int, access: str = "rw") -> Dict[str, Any]:
    """Does the allow-list admit character device `major` (any minor) for `access`?"""
    all_minors = False
    minors = set()
    for rule in rules:
        if rule["type"] not in ("a", "c"):
            continue
        if rule["major"] != "*" and rule["major"] != major:
            continue
        if not all(flag in rule["access"] for flag in access):
            continue
        if rule["type"] == "a" or rule["minor"] == "*":
            all_minors = True
        else:
            minors.add(rule["minor"])
    return {"all_minors": all_minors, "minors": sorted(minors), "allowed": all_minors or bool(minors)}


def find_devices_list(entries: List[Dict[str, Any]], sys_root: str) -> Tuple[Optional[str], List[str]]:
    """Path of our devices.list (cgroup v1), trying the path from /proc/self/cgroup and then the mount root."""
    base = os.path.join(sys_root, "fs", "cgroup", "devices")
    tried: List[str] = []
    for entry in entries:
        if "devices" in entry["controllers"]:
            candidate = os.path.join(base, entry["path"].lstrip("/"), "devices.list")
            tried.append(candidate)
            if os.path.exists(candidate):
                return candidate, tried
    fallback = os.path.join(base, "devices.list")
    tried.append(fallback)
    return (fallback if os.path.exists(fallback) else None), tried


def cgroup_version(entries: List[Dict[str, Any]], sys_root: str) -> int:
    if any("devices" in entry["controllers"] for entry in entries):
        return 1
    if os.path.exists(os.path.join(sys_root, "fs", "cgroup", "cgroup.controllers")):
        return 2
    return 1 if any(entry["hierarchy"] != "0" for entry in entries) else 2


def collect_cgroup_devices(context: ReadContext) -> Dict[str, Any]:
    roots = context.roots
    try:
        entries = parse_proc_self_cgroup(read_text(os.path.join(roots.proc, "self", "cgroup")))
        membership: Any = entries
    except OSError as exc:
        entries = []
        membership = unavailable("/proc/self/cgroup could not be read: %s" % (exc.strerror or exc))
    version = cgroup_version(entries, roots.sys)
    result: Dict[str, Any] = {"cgroup_version": version, "proc_self_cgroup": membership}
    try:
        majors = {major: "/".join(names) for major, names
                  in parse_proc_devices(read_text(os.path.join(roots.proc, "devices"))).items()
                  if any("nvidia" in name for name in names)}
    except OSError as exc:
        majors = {}
        result["nvidia_majors_allowed"] = unavailable("/proc/devices could not be read: %s" % (exc.strerror or exc))
    if version == 2:
        result["devices_list_path"] = unavailable(CGROUP_V2_REASON)
        result["rules"] = unavailable(CGROUP_V2_REASON)
        result.setdefault("nvidia_majors_allowed", unavailable(CGROUP_V2_REASON))
        return result
    path, tried = find_devices_list(entries, roots.sys)
    if path is None:
        reason = unavailable("no devices.list found (tried %s)" % ", ".join(tried))
        result.update(devices_list_path=reason, rules=reason)
        result.setdefault("nvidia_majors_allowed", reason)
        return result
    result["devices_list_path"] = path
    try:
        rules = parse_devices_list(read_text(path))
    except OSError as exc:
        reason = unavailable("%s could not be read: %s" % (path, exc.strerror or exc))
        result.update(rules=reason)
        result.setdefault("nvidia_majors_allowed", reason)
        return result
    result["rules"] = rules
    result.setdefault("nvidia_majors_allowed", [
        dict(major=major, driver=name, **device_allowed(rules, major)) for major, name in sorted(majors.items())])
    return result
