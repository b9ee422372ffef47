"""The health probe on a real NVIDIA machine (run on the device: python3 -m pytest -m gpu tests/gpu)."""
import json
import os
import subprocess
import sys

import pytest

from ansible_collections.gpufleet.validation.plugins.plugin_utils.store.schemas import schema_validator

pytestmark = pytest.mark.gpu

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


@pytest.fixture(scope="module")
def health(tmp_path_factory):
    out = tmp_path_factory.mktemp("health") / "health.json"
    subprocess.run([sys.executable, os.path.join(ROOT, "probes", "health.py"), "--out", str(out)],
                   check=True, timeout=600)
    with open(out) as handle:
        return json.load(handle)


def test_health_sees_every_gpu_that_torch_sees(health):
    torch = pytest.importorskip("torch")
    assert health["status"] == "ok", health["reason"]
    gpus = health["data"]["gpus"]
    assert len(gpus) == torch.cuda.device_count() > 0
    for gpu in gpus:
        assert gpu["uuid"].startswith("GPU-")
        assert isinstance(gpu["memory"]["total_mib"], int) and gpu["memory"]["total_mib"] > 1024
        assert isinstance(gpu["power"]["limit_w"], float)
        assert gpu["pci"]["bus_id"]


def test_cuda_initialises_in_a_fresh_process_on_every_gpu(health):
    cuda_init = health["data"]["cuda_init"]
    assert cuda_init["ok"] is True, cuda_init
    assert cuda_init["device_count"] == len(health["data"]["gpus"])
    assert all(device["ok"] for device in cuda_init["devices"])


def test_every_device_node_major_matches_proc_devices(health):
    nodes = health["data"]["device_nodes"]
    assert nodes["mismatches"] == []
    assert nodes["gpu_node_count_matches_nvml"] is True


def test_topology_covers_every_pair(health):
    count = len(health["data"]["gpus"])
    pairs = health["data"]["topology"]["pairs"]
    assert len(pairs) == count * (count - 1) // 2
    assert all(pair["link_class"] for pair in pairs)


def test_the_result_is_schema_valid(health):
    pytest.importorskip("jsonschema")
    schema_validator("health.schema.json").validate(health["data"])


def test_every_nvml_gpu_is_on_the_pci_bus_read_without_the_driver(health):
    """The machine section (issue 31): the GPUs on the bus from sysfs, each matched to NVML by its bus id."""
    machine = health["data"]["machine"]
    gpus = health["data"]["gpus"]
    bus = {gpu["address"]: gpu for gpu in machine["pci_gpus"]}
    for gpu in gpus:
        on_bus = bus[gpu["pci"]["bus_id"]]
        assert (on_bus["in_nvml"], on_bus["nvml_index"], on_bus["driver"]) == (True, gpu["index"], "nvidia")
        assert on_bus["device_minor"] == gpu["minor_number"]
        # NVML's pciDeviceId is device << 16 | vendor: 0x233510de is device 0x2335 of vendor 0x10de
        assert on_bus["device_id"] == gpu["pci"]["device_id"][:6]
        assert gpu["virtualization_mode"] in ("none", "pass_through", "vgpu", "host_vgpu", "host_vsga")
        assert isinstance(gpu["gsp_firmware_version"], (str, dict))
    assert isinstance(machine["cpu_hypervisor_flag"], bool)
    schema_validator("health.schema.json").validate(health["data"])
