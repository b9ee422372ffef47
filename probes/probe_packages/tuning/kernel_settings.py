"""The kernel, CPU idle and frequency, memory and network settings an operator tunes, from /proc and /sys (no root)."""
from __future__ import annotations

import glob
import os
import re
from collections import Counter
from typing import Any, Dict, List, Tuple

from probe_packages.tuning.sysfs_values import bracketed_choice, read_value
from probelib.fields import unavailable
from probelib.system.sysfs import read_text
from probelib.system.sysfs_field import nonempty_text, whole_number

SYSCTL_INTEGERS = (
    ("numa_balancing", ("kernel", "numa_balancing")),
    ("nmi_watchdog", ("kernel", "nmi_watchdog")),
    ("sched_autogroup_enabled", ("kernel", "sched_autogroup_enabled")),
    ("vm_swappiness", ("vm", "swappiness")),
    ("vm_dirty_ratio", ("vm", "dirty_ratio")),
    ("vm_dirty_background_ratio", ("vm", "dirty_background_ratio")),
    ("net_core_rmem_max_bytes", ("net", "core", "rmem_max")),
    ("net_core_wmem_max_bytes", ("net", "core", "wmem_max")),
)
CMDLINE_TUNING_KEYS = (
    "processor.max_cstate", "intel_idle.max_cstate", "idle", "amd_pstate", "intel_pstate", "nmi_watchdog",
    "pcie_aspm", "pcie_aspm.policy", "numa_balancing", "transparent_hugepage", "iommu", "intel_iommu", "amd_iommu",
    "iommu.passthrough", "iommu.strict", "isolcpus", "nohz_full", "mitigations",
)
CMDLINE_LIMIT_BYTES = 64 << 10
NO_CPUIDLE = "cpuidle is not built in, or a container hides it"


def read_kernel_settings(proc_root: str, sys_root: str) -> Dict[str, Any]:
    settings: Dict[str, Any] = {
        name: read_value(os.path.join(proc_root, "sys", *parts), whole_number) for name, parts in SYSCTL_INTEGERS}
    thp = os.path.join(sys_root, "kernel", "mm", "transparent_hugepage")
    for name in ("enabled", "defrag"):
        settings["transparent_hugepage_" + name] = read_value(
            os.path.join(thp, name), bracketed_choice, "a kernel without transparent huge pages")
    settings["pcie_aspm_policy"] = read_value(
        os.path.join(sys_root, "module", "pcie_aspm", "parameters", "policy"), bracketed_choice,
        "a kernel without PCIe ASPM support, or pcie_aspm=off")
    settings["cmdline_settings"] = read_cmdline_settings(os.path.join(proc_root, "cmdline"))
    settings["max_cstate_parameters"] = read_max_cstate_parameters(sys_root)
    cpu = os.path.join(sys_root, "devices", "system", "cpu")
    settings["cpuidle"] = read_cpuidle(cpu)
    settings["cpufreq"] = read_cpufreq(cpu)
    settings["iommu"] = read_iommu(os.path.join(sys_root, "kernel", "iommu_groups"))
    return settings


def read_cmdline_settings(path: str) -> Any:
    try:
        text = read_text(path, CMDLINE_LIMIT_BYTES)
    except OSError as exc:
        return unavailable("%s could not be read: %s" % (path, exc.strerror or exc))
    return cmdline_settings(text)


def cmdline_settings(cmdline: str) -> Dict[str, str]:
    """The tuning keys of a kernel command line, a bare flag as ''; nothing else of it is ever recorded. The kernel
    reads '-' and '_' in a parameter name alike, and hands what follows '--' to init."""
    found: Dict[str, str] = {}
    for token in cmdline.split():
        if token == "--":
            break
        key, unused_separator, value = token.partition("=")
        key = key.replace("-", "_")
        if key in CMDLINE_TUNING_KEYS:
            found[key] = value
    return found


def read_max_cstate_parameters(sys_root: str) -> Dict[str, Any]:
    """{module: its max_cstate parameter} for intel_idle, processor or any other module that has one."""
    found = {}
    for path in sorted(glob.glob(os.path.join(sys_root, "module", "*", "parameters", "max_cstate"))):
        module = os.path.basename(os.path.dirname(os.path.dirname(path)))
        found[module] = read_value(path, whole_number)
    return found


def read_cpuidle(cpu_root: str) -> Any:
    cpuidle = os.path.join(cpu_root, "cpuidle")
    if not os.path.isdir(cpuidle):
        return unavailable("%s is missing (%s)" % (cpuidle, NO_CPUIDLE))
    governor_file = "current_governor" if os.path.exists(os.path.join(cpuidle, "current_governor")) \
        else "current_governor_ro"
    return {
        "driver": read_value(os.path.join(cpuidle, "current_driver"), nonempty_text, NO_CPUIDLE),
        "governor": read_value(os.path.join(cpuidle, governor_file), nonempty_text, NO_CPUIDLE),
        "states": idle_states(cpu_root),
    }


def idle_states(cpu_root: str) -> List[Dict[str, Any]]:
    """One row per state name, in the order of the state directories: its exit latency (the lowest-numbered CPU's),
    how many CPUs have it and on how many it is disabled."""
    rows: Dict[str, Dict[str, Any]] = {}
    for cpu in numbered(os.path.join(cpu_root, "cpu[0-9]*"), "cpu"):
        for state in numbered(os.path.join(cpu, "cpuidle", "state[0-9]*"), "state"):
            name = read_value(os.path.join(state, "name"), nonempty_text)
            if not isinstance(name, str):
                name = os.path.basename(state)
            row = rows.setdefault(name, {"name": name, "latency_us": read_value(os.path.join(state, "latency"),
                                                                                whole_number),
                                         "cpus": 0, "disabled_cpus": 0})
            row["cpus"] += 1
            disabled = read_value(os.path.join(state, "disable"), whole_number)
            if isinstance(disabled, int) and disabled:
                row["disabled_cpus"] += 1
    return list(rows.values())


def numbered(pattern: str, prefix: str) -> List[str]:
    """The paths matching pattern whose name is prefix and a number, in numeric order (cpu2 before cpu10)."""
    paths: List[Tuple[int, str]] = []
    for path in glob.glob(pattern):
        suffix = os.path.basename(path)[len(prefix):]
        if re.fullmatch(r"[0-9]+", suffix):
            paths.append((int(suffix), path))
    return [path for unused_number, path in sorted(paths)]


def read_cpufreq(cpu_root: str) -> Any:
    drivers: Counter = Counter()
    governors: Counter = Counter()
    for cpu in numbered(os.path.join(cpu_root, "cpu[0-9]*"), "cpu"):
        directory = os.path.join(cpu, "cpufreq")
        if not os.path.isdir(directory):
            continue
        for name, counter in (("scaling_driver", drivers), ("scaling_governor", governors)):
            value = read_value(os.path.join(directory, name), nonempty_text)
            counter[value if isinstance(value, str) else "unreadable"] += 1
    statuses = {name: read_value(os.path.join(cpu_root, directory, "status"), nonempty_text,
                                 "the %s driver is not loaded" % directory)
                for name, directory in (("amd_pstate_status", "amd_pstate"), ("intel_pstate_status", "intel_pstate"))}
    if not drivers and all(isinstance(status, dict) for status in statuses.values()):
        return unavailable("no CPU has a cpufreq directory under %s and neither amd_pstate nor intel_pstate is loaded "
                           "(a VM, a container that hides it, or no cpufreq driver)" % cpu_root)
    result: Dict[str, Any] = {"drivers": dict(sorted(drivers.items())), "governors": dict(sorted(governors.items()))}
    result.update(statuses)
    return result


def read_iommu(groups_dir: str) -> Dict[str, Any]:
    try:
        groups = sorted(os.listdir(groups_dir))
    except OSError as exc:
        reason = "%s could not be listed: %s (no IOMMU is enabled, or the kernel has none)" % (
            groups_dir, exc.strerror or exc)
        return {"group_count": unavailable(reason), "default_domain_types": unavailable(reason)}
    types: Counter = Counter()
    for group in groups:
        value = read_value(os.path.join(groups_dir, group, "type"), nonempty_text, "kernels before 5.11 have none")
        if isinstance(value, str):
            types[value] += 1
    if groups and not types:
        domain_types: Any = unavailable("no group under %s has a readable type file (kernels before 5.11 have none)"
                                        % groups_dir)
    else:
        domain_types = dict(sorted(types.items()))
    return {"group_count": len(groups), "default_domain_types": domain_types}
