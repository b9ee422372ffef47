"""tuning: the host settings an operator changes (PCIe on every GPU's path, kernel, CPU idle and frequency, memory)."""
from __future__ import annotations

from typing import Any, Dict, List

from ...probe_kit.kit import Setting, MISSING, dig, is_unavailable, ProbeJudging, acs_text, pci_device_label
from .checks import TUNING_CHECKS

# (setting id, key of a pci_devices entry or a path into it, words, unit). Link speed is left out: GPUs lower it when idle.
PCI_SETTINGS = (
    ("tuning.pcie_max_payload_bytes", ("max_payload_bytes",), "PCIe MaxPayload", "B"),
    ("tuning.pcie_max_read_request_bytes", ("max_read_request_bytes",), "PCIe MaxReadReq", "B"),
    ("tuning.pcie_link_width", ("link", "width"), "PCIe link width", "lanes"),
    ("tuning.pcie_aspm_control", ("aspm", "control"), "PCIe ASPM control", ""),
)
# (setting id, key of the kernel section, words, unit)
KERNEL_SETTINGS = (
    ("tuning.numa_balancing", "numa_balancing", "NUMA balancing", ""),
    ("tuning.nmi_watchdog", "nmi_watchdog", "NMI watchdog", ""),
    ("tuning.sched_autogroup_enabled", "sched_autogroup_enabled", "scheduler autogroup", ""),
    ("tuning.vm_swappiness", "vm_swappiness", "vm.swappiness", ""),
    ("tuning.vm_dirty_ratio", "vm_dirty_ratio", "vm.dirty_ratio", "%"),
    ("tuning.vm_dirty_background_ratio", "vm_dirty_background_ratio", "vm.dirty_background_ratio", "%"),
    ("tuning.transparent_hugepage_enabled", "transparent_hugepage_enabled", "transparent huge pages", ""),
    ("tuning.transparent_hugepage_defrag", "transparent_hugepage_defrag", "transparent huge page defrag", ""),
    ("tuning.net_core_rmem_max_bytes", "net_core_rmem_max_bytes", "net.core.rmem_max", "B"),
    ("tuning.net_core_wmem_max_bytes", "net_core_wmem_max_bytes", "net.core.wmem_max", "B"),
    ("tuning.pcie_aspm_policy", "pcie_aspm_policy", "PCIe ASPM policy", ""),
)


def _counts(value: Any) -> Any:
    """{name: CPUs} as one text ("performance ×64"), an unavailable field as it stands."""
    if is_unavailable(value) or not isinstance(value, dict):
        return value
    return ", ".join("%s ×%s" % (name, count) for name, count in sorted(value.items())) or "none"


def tuning_settings(data: Dict[str, Any]) -> List[Setting]:
    """Every recorded setting: per PCI device on the GPUs' paths, then the kernel's, each with where it is."""
    found: List[Setting] = []
    devices = data.get("pci_devices")
    for device in devices if isinstance(devices, list) else []:
        if not isinstance(device, dict):
            continue
        where = pci_device_label(device)
        for setting_id, path, words, unit in PCI_SETTINGS:
            value = dig(device, *path)
            if value is not MISSING:
                found.append(Setting(setting_id, words, value, where, unit))
        acs = device.get("acs")
        if acs is not None:
            found.append(Setting("tuning.pcie_acs_control", "PCIe ACS control", acs if is_unavailable(acs) else acs_text(acs), where))
    kernel = data.get("kernel") if isinstance(data.get("kernel"), dict) else {}
    for setting_id, key, words, unit in KERNEL_SETTINGS:
        if key in kernel:
            found.append(Setting(setting_id, words, kernel[key], unit=unit))
    cmdline = kernel.get("cmdline_settings")
    if isinstance(cmdline, dict) and not is_unavailable(cmdline):
        found.extend(Setting("tuning.cmdline_settings", "tuning on the kernel command line", value, key)
                     for key, value in sorted(cmdline.items()))
    cstates = kernel.get("max_cstate_parameters")
    if isinstance(cstates, dict) and not is_unavailable(cstates):
        found.extend(Setting("tuning.max_cstate", "max_cstate module parameter", value, module)
                     for module, value in sorted(cstates.items()))
    cpuidle = kernel.get("cpuidle")
    if isinstance(cpuidle, dict) and not is_unavailable(cpuidle):
        for key, words in (("driver", "cpuidle driver"), ("governor", "cpuidle governor")):
            if key in cpuidle:
                found.append(Setting("tuning.cpuidle_%s" % key, words, cpuidle[key]))
        states = cpuidle.get("states")
        for state in states if isinstance(states, list) else []:
            if isinstance(state, dict) and isinstance(state.get("name"), str):
                found.append(Setting("tuning.cpuidle_state_disabled", "idle state disabled", "%s of %s CPUs" % (
                    state.get("disabled_cpus"), state.get("cpus")), "state %s" % state["name"]))
    elif cpuidle is not None:
        found.append(Setting("tuning.cpuidle_driver", "cpuidle driver", cpuidle))
    cpufreq = kernel.get("cpufreq")
    if isinstance(cpufreq, dict) and not is_unavailable(cpufreq):
        for key, words in (("drivers", "cpufreq driver"), ("governors", "cpufreq governor")):
            if key in cpufreq:
                found.append(Setting("tuning.cpufreq_%s" % key, words, _counts(cpufreq[key])))
        for key, words in (("amd_pstate_status", "amd_pstate mode"), ("intel_pstate_status", "intel_pstate mode")):
            if key in cpufreq and not is_unavailable(cpufreq[key]):
                found.append(Setting("tuning.%s" % key, words, cpufreq[key]))
    elif cpufreq is not None:
        found.append(Setting("tuning.cpufreq_drivers", "cpufreq driver", cpufreq))
    iommu = kernel.get("iommu")
    if isinstance(iommu, dict) and "default_domain_types" in iommu:
        found.append(Setting("tuning.iommu_domain_types", "IOMMU default domain types", _counts(iommu["default_domain_types"])))
    return found


JUDGING = ProbeJudging(
    checks=TUNING_CHECKS,
    settings=tuning_settings,
)
