"""host_gpus: how many NVIDIA GPUs the host has, from NVML, /proc/driver/nvidia and the PCI bus, on fake trees."""
import fake_pynvml
from host_roots import host_reader, host_roots, no_nvml
from probelib.measure.host_gpus import HostGpus, nothing_to_measure, nvml_count, pci_count, proc_count, read_host_gpus


def test_nvml_decides_when_it_counts_gpus_and_is_always_shut_down(tmp_path):
    module = fake_pynvml.FakeModule(count=2)
    assert nvml_count(lambda: module) == (2, "NVML: 2 GPU(s)") and module.shut_down
    host = host_reader(tmp_path, gpus=2, nvml_gpus=2)()
    assert host == HostGpus(count=2, source="nvml", evidence=host.evidence, kernel_module_loaded=True)
    assert "NVML: 2 GPU(s)" in host.evidence and "PCI: 2 NVIDIA GPU(s) (0000:1b:00.0, 0000:43:00.0)" in host.evidence


def test_nvml_that_cannot_initialise_is_shut_down_never_and_proc_decides(tmp_path):
    module = fake_pynvml.FakeModule(count=1)
    module.nvmlInit = fake_pynvml.library_not_found
    count, said = nvml_count(lambda: module)
    assert count is None and "NVML library not found" in said and not module.shut_down
    proc_root, sys_root = host_roots(tmp_path, gpus=1)
    host = read_host_gpus(proc_root, sys_root, nvml_importer=lambda: module)
    assert (host.count, host.source, host.kernel_module_loaded) == (1, "proc", True)
    assert "gpus: 1 GPU(s) (0000:1b:00.0)" in host.evidence


def test_nvswitches_and_other_pci_devices_are_not_gpus(tmp_path):
    proc_root, sys_root = host_roots(tmp_path, gpus=0, module_loaded=False)
    assert pci_count(sys_root) == (0, "PCI: 0 NVIDIA GPU(s)")
    host = read_host_gpus(proc_root, sys_root, nvml_importer=no_nvml)
    assert (host.count, host.source, host.kernel_module_loaded) == (0, "none", False)
    assert "nvidia-ml-py is not installed" in host.evidence and "not readable" in host.evidence


def test_a_3d_controller_without_a_kernel_module_is_found_on_the_pci_bus(tmp_path):
    proc_root, sys_root = host_roots(tmp_path, gpus=1, module_loaded=False, gpu_class="0x030000")
    count, said = proc_count(proc_root)
    assert count is None and "driver/nvidia/gpus: not readable" in said
    host = read_host_gpus(proc_root, sys_root, nvml_importer=no_nvml)
    assert (host.count, host.source, host.kernel_module_loaded) == (1, "pci", False)


def test_missing_roots_are_evidence_not_errors(tmp_path):
    host = read_host_gpus(str(tmp_path / "no-proc"), str(tmp_path / "no-sys"), nvml_importer=no_nvml)
    assert (host.count, host.source, host.kernel_module_loaded) == (0, "none", False)
    assert host.evidence.count("not readable") == 2


def test_nothing_to_measure_names_every_source_on_a_host_without_nvidia_gpus(tmp_path):
    proc_root, sys_root = host_roots(tmp_path, gpus=0, module_loaded=False)
    said = nothing_to_measure(proc_root, sys_root, nvml_importer=no_nvml)
    assert said.startswith("nothing to measure: this host has no NVIDIA GPU (")
    assert "PCI: 0 NVIDIA GPU(s)" in said and "nvidia-ml-py is not installed" in said


def test_a_gpu_the_driver_cannot_see_is_something_to_measure(tmp_path):
    (tmp_path / "a").mkdir()
    proc_root, sys_root = host_roots(tmp_path / "a", gpus=1, module_loaded=False)
    assert nothing_to_measure(proc_root, sys_root, nvml_importer=no_nvml) is None
    (tmp_path / "b").mkdir()
    proc_root, sys_root = host_roots(tmp_path / "b", gpus=2)
    assert nothing_to_measure(proc_root, sys_root, nvml_importer=no_nvml) is None
