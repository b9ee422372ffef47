"""The kernel, CPU and memory settings, from fake /proc and /sys trees."""
import os
import shutil

from probe_packages.tuning.kernel_settings import cmdline_settings, read_kernel_settings
from tuning_trees import rtx_pro_6000_two_numa, write_file


def kernel_of(roots):
    return read_kernel_settings(roots.proc, roots.sys)


def test_the_operators_kernel_settings(tmp_path):
    kernel = kernel_of(rtx_pro_6000_two_numa(tmp_path))
    assert {key: kernel[key] for key in ("numa_balancing", "nmi_watchdog", "sched_autogroup_enabled", "vm_swappiness",
                                         "vm_dirty_ratio", "vm_dirty_background_ratio", "net_core_rmem_max_bytes",
                                         "net_core_wmem_max_bytes")} == {
        "numa_balancing": 0, "nmi_watchdog": 0, "sched_autogroup_enabled": 0, "vm_swappiness": 10,
        "vm_dirty_ratio": 10, "vm_dirty_background_ratio": 5, "net_core_rmem_max_bytes": 67108864,
        "net_core_wmem_max_bytes": 67108864}
    assert kernel["transparent_hugepage_enabled"] == "madvise"
    assert kernel["transparent_hugepage_defrag"] == "madvise"
    assert kernel["pcie_aspm_policy"] == "default"
    assert kernel["cmdline_settings"] == {"processor.max_cstate": "1", "amd_pstate": "active", "iommu": "pt",
                                          "nmi_watchdog": "0", "mitigations": "off"}
    assert kernel["max_cstate_parameters"] == {"processor": 1}
    assert kernel["cpuidle"] == {"driver": "acpi_idle", "governor": "menu", "states": [
        {"name": "POLL", "latency_us": 0, "cpus": 8, "disabled_cpus": 0},
        {"name": "C1", "latency_us": 1, "cpus": 8, "disabled_cpus": 0}]}
    assert kernel["cpufreq"] == {"drivers": {"amd-pstate-epp": 8}, "governors": {"performance": 8},
                                 "amd_pstate_status": "active",
                                 "intel_pstate_status": kernel["cpufreq"]["intel_pstate_status"]}
    assert "intel_pstate driver is not loaded" in kernel["cpufreq"]["intel_pstate_status"]["unavailable"]
    assert kernel["iommu"] == {"group_count": 4, "default_domain_types": {"identity": 4}}


def test_only_tuning_keys_of_the_command_line():
    settings = cmdline_settings("BOOT_IMAGE=/vmlinuz root=UUID=1 ro quiet isolcpus=2-7 nohz_full=2-7 idle=poll "
                                "intel-idle.max_cstate=0 pcie_aspm=off iommu.strict=0 token=secret -- nmi_watchdog=1")
    assert settings == {"isolcpus": "2-7", "nohz_full": "2-7", "idle": "poll", "intel_idle.max_cstate": "0",
                        "pcie_aspm": "off", "iommu.strict": "0"}
    assert cmdline_settings("ro mitigations") == {"mitigations": ""}


def test_disabled_states_are_counted(tmp_path):
    roots = rtx_pro_6000_two_numa(tmp_path)
    for cpu in (2, 5):
        write_file(os.path.join(roots.sys, "devices", "system", "cpu", "cpu%d" % cpu, "cpuidle", "state1", "disable"),
                   "1")
    states = kernel_of(roots)["cpuidle"]["states"]
    assert states[1] == {"name": "C1", "latency_us": 1, "cpus": 8, "disabled_cpus": 2}


def test_non_numeric_missing_and_unbracketed_values_are_reasons(tmp_path):
    roots = rtx_pro_6000_two_numa(tmp_path)
    write_file(os.path.join(roots.proc, "sys", "vm", "swappiness"), "ten")
    os.unlink(os.path.join(roots.proc, "sys", "kernel", "numa_balancing"))
    write_file(os.path.join(roots.sys, "kernel", "mm", "transparent_hugepage", "enabled"), "madvise")
    write_file(os.path.join(roots.sys, "module", "processor", "parameters", "max_cstate"), "deep")
    write_file(os.path.join(roots.sys, "devices", "system", "cpu", "cpu0", "cpuidle", "state1", "latency"), "?")
    kernel = kernel_of(roots)
    assert "swappiness reads 'ten': not a whole number" in kernel["vm_swappiness"]["unavailable"]
    assert "numa_balancing is missing" in kernel["numa_balancing"]["unavailable"]
    assert "no [bracketed] choice" in kernel["transparent_hugepage_enabled"]["unavailable"]
    assert "not a whole number" in kernel["max_cstate_parameters"]["processor"]["unavailable"]
    assert "not a whole number" in kernel["cpuidle"]["states"][1]["latency_us"]["unavailable"]
    assert kernel["vm_dirty_ratio"] == 10


def test_a_bare_kernel_says_what_it_lacks(tmp_path):
    roots = rtx_pro_6000_two_numa(tmp_path)
    cpu_root = os.path.join(roots.sys, "devices", "system", "cpu")
    shutil.rmtree(os.path.join(cpu_root, "cpuidle"))
    shutil.rmtree(os.path.join(cpu_root, "amd_pstate"))
    for cpu in range(8):
        shutil.rmtree(os.path.join(cpu_root, "cpu%d" % cpu, "cpufreq"))
    shutil.rmtree(os.path.join(roots.sys, "kernel", "iommu_groups"))
    shutil.rmtree(os.path.join(roots.sys, "module"))
    os.unlink(os.path.join(roots.proc, "cmdline"))
    kernel = kernel_of(roots)
    assert "cpuidle is missing" in kernel["cpuidle"]["unavailable"]
    assert "no CPU has a cpufreq directory" in kernel["cpufreq"]["unavailable"]
    assert "could not be listed" in kernel["iommu"]["group_count"]["unavailable"]
    assert "unavailable" in kernel["iommu"]["default_domain_types"]
    assert kernel["max_cstate_parameters"] == {}
    assert "policy is missing" in kernel["pcie_aspm_policy"]["unavailable"]
    assert "cmdline could not be read" in kernel["cmdline_settings"]["unavailable"]


def test_iommu_groups_without_a_type_file(tmp_path):
    roots = rtx_pro_6000_two_numa(tmp_path)
    groups = os.path.join(roots.sys, "kernel", "iommu_groups")
    for group in os.listdir(groups):
        os.unlink(os.path.join(groups, group, "type"))
    iommu = kernel_of(roots)["iommu"]
    assert iommu["group_count"] == 4
    assert "kernels before 5.11" in iommu["default_domain_types"]["unavailable"]
