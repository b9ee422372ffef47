"""Fake /proc and /sys trees for probelib.measure.host_gpus: NVIDIA GPUs, NVSwitches and other PCI devices."""
import functools

import fake_pynvml
from probelib.measure import host_gpus

GPU_ADDRESSES = ("0000:1b:00.0", "0000:43:00.0")
NVSWITCH = ("0000:c5:00.0", "0x10de", "0x068000")
INTEL_HOST_BRIDGE = ("0000:00:00.0", "0x8086", "0x060000")


def pci_device(sys_root, address, vendor, device_class):
    device = sys_root / "bus" / "pci" / "devices" / address
    device.mkdir(parents=True)
    (device / "vendor").write_text(vendor + "\n")
    (device / "class").write_text(device_class + "\n")


def host_roots(tmp_path, gpus=1, module_loaded=True, gpu_class="0x030200"):
    """(proc_root, sys_root) of a host with ``gpus`` NVIDIA GPUs on its PCI bus beside an NVSwitch and a host bridge;
    with module_loaded, /proc/driver/nvidia/gpus holds one directory per GPU."""
    proc_root, sys_root = tmp_path / "proc", tmp_path / "sys"
    proc_root.mkdir()
    for address, vendor, device_class in (NVSWITCH, INTEL_HOST_BRIDGE):
        pci_device(sys_root, address, vendor, device_class)
    for address in GPU_ADDRESSES[:gpus]:
        pci_device(sys_root, address, "0x10de", gpu_class)
    if module_loaded:
        gpus_dir = proc_root / "driver" / "nvidia" / "gpus"
        gpus_dir.mkdir(parents=True)
        for address in GPU_ADDRESSES[:gpus]:
            (gpus_dir / address).mkdir()
    return str(proc_root), str(sys_root)


def no_nvml():
    raise ImportError("no nvidia-ml-py in this test")


def host_reader(tmp_path, gpus=1, module_loaded=True, nvml_gpus=None):
    """read_host_gpus bound to a fake host; NVML lists nvml_gpus GPUs (None: nvidia-ml-py does not import)."""
    proc_root, sys_root = host_roots(tmp_path, gpus, module_loaded)
    importer = no_nvml if nvml_gpus is None else (lambda: fake_pynvml.FakeModule(count=nvml_gpus))
    return functools.partial(host_gpus.read_host_gpus, proc_root=proc_root, sys_root=sys_root, nvml_importer=importer)
