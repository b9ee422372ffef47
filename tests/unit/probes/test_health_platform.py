from probe_packages.health.platform_info import (detect_container, parse_iommu_cmdline, parse_os_release, read_cpufreq,
                                                 read_numa_nodes, relevant_environment)
from probelib.system.roots import SystemRoots


def test_only_allow_listed_environment_is_recorded():
    environ = {"CUDA_VISIBLE_DEVICES": "0,1", "NCCL_DEBUG": "INFO", "NCCL_NVLS_ENABLE": "0",
               "AWS_SECRET_ACCESS_KEY": "hunter2", "HF_TOKEN": "hf_x", "PATH": "/usr/bin", "MY_NCCL_X": "1",
               "CUDA_DEVICE_ORDER": "PCI_BUS_ID", "NVIDIA_VISIBLE_DEVICES": "all"}
    assert relevant_environment(environ) == {
        "CUDA_DEVICE_ORDER": "PCI_BUS_ID", "CUDA_VISIBLE_DEVICES": "0,1", "NCCL_DEBUG": "INFO",
        "NCCL_NVLS_ENABLE": "0", "NVIDIA_VISIBLE_DEVICES": "all"}


def test_os_release():
    text = 'NAME="Ubuntu"\nVERSION_ID="24.04"\nID=ubuntu\n# comment\nPRETTY_NAME="Ubuntu 24.04.3 LTS"\n'
    assert parse_os_release(text) == {"ID": "ubuntu", "VERSION_ID": "24.04", "PRETTY_NAME": "Ubuntu 24.04.3 LTS"}


def test_iommu_options_from_cmdline():
    cmdline = "BOOT_IMAGE=/vmlinuz root=UUID=1 ro intel_iommu=on iommu=pt quiet iommu.passthrough=1"
    assert parse_iommu_cmdline(cmdline) == {"intel_iommu": "on", "iommu": "pt", "iommu.passthrough": "1"}


def test_cpufreq_counts_governors(tmp_path):
    for cpu, governor in enumerate(["performance", "performance", "powersave"]):
        directory = tmp_path / "devices" / "system" / "cpu" / ("cpu%d" % cpu) / "cpufreq"
        directory.mkdir(parents=True)
        (directory / "scaling_governor").write_text(governor + "\n")
        (directory / "scaling_driver").write_text("intel_pstate\n")
    result = read_cpufreq(str(tmp_path))
    assert result == {"cpu_count": 3, "drivers": {"intel_pstate": 3},
                      "governors": {"performance": 2, "powersave": 1}}
    assert "unavailable" in read_cpufreq(str(tmp_path / "nowhere"))


def test_numa_nodes(tmp_path):
    for node, cpus in ((0, "0-3"), (1, "4-7"), (10, "8")):
        directory = tmp_path / "devices" / "system" / "node" / ("node%d" % node)
        directory.mkdir(parents=True)
        (directory / "cpulist").write_text(cpus + "\n")
        (directory / "meminfo").write_text("Node %d MemTotal:       2097152 kB\n" % node)
    nodes = read_numa_nodes(str(tmp_path))
    assert [n["node"] for n in nodes] == [0, 1, 10]
    assert nodes[1] == {"node": 1, "cpulist": "4-7", "cpu_count": 4, "memory_total_mib": 2048}


def test_container_detection_from_lxc_cgroup(tmp_path):
    (tmp_path / "proc" / "1").mkdir(parents=True)
    (tmp_path / "proc" / "1" / "cgroup").write_text("0::/lxc.payload.gpu01/init.scope\n")
    (tmp_path / "proc" / "self").mkdir()
    (tmp_path / "proc" / "self" / "mountinfo").write_text(
        "25 1 0:23 / / rw,relatime - overlay overlay rw,lowerdir=/a\n")
    result = detect_container(SystemRoots(proc=str(tmp_path / "proc"), root=str(tmp_path)))
    assert result["in_container"] is True
    assert result["kind"] == "lxc"
    assert result["root_filesystem_type"] == "overlay"
    bare = tmp_path / "bare"
    (bare / "proc" / "1").mkdir(parents=True)
    (bare / "proc" / "1" / "cgroup").write_text("0::/init.scope\n")
    assert detect_container(SystemRoots(proc=str(bare / "proc"), root=str(bare)))["in_container"] is False
