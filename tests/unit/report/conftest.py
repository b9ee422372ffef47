"""Fake run directories: realistic envelopes written where the probe action plugin would write them."""
from __future__ import annotations

import copy
import json
import os
import sys

import pytest

REPO_ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", ".."))
if REPO_ROOT not in sys.path:
    sys.path.insert(0, REPO_ROOT)

from plugins.plugin_utils.result_paths import host_dir_name  # noqa: E402

RUN_ID = "20261130T020000Z-123456"
EVIL_HOST = "<script>alert(1)</script>../x"


def _gpu(index, uuid, bus, draw_w, temperature_c):
    return {
        "index": index, "name": "NVIDIA H200", "uuid": uuid, "serial": "165302300%04d" % index,
        "pci_bus_id": bus, "memory_total_mib": 143771, "memory_used_mib": 512,
        "clocks": {"sm_mhz": 345, "sm_max_mhz": 1980, "mem_mhz": 2619, "mem_max_mhz": 3201},
        "power": {"draw_w": draw_w, "limit_w": 700.0},
        "temperature_c": temperature_c,
        "ecc": {"mode": "enabled", "volatile_uncorrectable": 0, "aggregate_uncorrectable": 0},
        "remapped_rows": {"pending": False, "failure": False, "correctable": 0, "uncorrectable": 0},
        "pcie": {"gen_current": 1, "gen_max": 5, "width_current": 16, "width_max": 16},
        "nvlink": {"links": [{"link": link, "active": True, "speed_gbps": 26.562} for link in range(3)],
                   "active_count": 18, "supported_count": 18},
        "persistence_mode": True,
        "mig_mode": {"unavailable": "MIG mode could not be read: NVMLError_NotSupported: Not Supported"},
        "throttle_reasons": ["gpu_idle"],
        "processes": [{"pid": 4242 + index, "name": "python3", "used_memory_mib": 498}],
    }


H200_DATA = {
    "platform": {
        "hostname": "gpu-a01", "kernel_release": "6.14.0-36-generic",
        "cmdline": "BOOT_IMAGE=/vmlinuz root=UUID=abc ro quiet | splash",
        "os_release": {"PRETTY_NAME": "Ubuntu 24.04.3 LTS", "VERSION_ID": "24.04"},
        "cpu_model": "Intel(R) Xeon(R) Platinum 8480+",
        "numa_nodes": [{"node": 0, "cpus": "0-55"}, {"node": 1, "cpus": "56-111"}],
        "cpufreq": {"driver": "intel_pstate", "governor": "performance"},
        "container": {"kind": "lxc", "detected_by": "/proc/1/environ"},
        "relevant_environment": {"CUDA_VISIBLE_DEVICES": {"unavailable": "not set"}},
    },
    "driver": {"driver_version": "580.159.04", "cuda_driver_version": "13.0", "nvml_version": "13.580.159.04"},
    "cuda_init": {"ok": True, "device_count": 2, "devices": ["NVIDIA H200", "NVIDIA H200"],
                  "duration_s": 1.734, "torch_version": "2.11.0+cu130"},
    "device_nodes": {
        "nodes": [
            {"path": "/dev/nvidia0", "major": 195, "minor": 0, "proc_devices_name": "nvidia-frontend",
             "expected_major": 195, "match": True},
            {"path": "/dev/nvidia-uvm", "major": 504, "minor": 0, "proc_devices_name": "nvidia-uvm",
             "expected_major": 509, "match": False},
        ],
        "mismatches": ["/dev/nvidia-uvm has major 504 but /proc/devices says nvidia-uvm is 509"],
    },
    "cgroup_devices": {"unavailable": "cgroup v2 device rules are an eBPF program and cannot be read"},
    "gpus": [_gpu(0, "GPU-0a1b2c3d-1111-2222-3333-444455556666", "00000000:18:00.0", 73.456, 31),
             _gpu(1, "GPU-9f8e7d6c-1111-2222-3333-444455556666", "00000000:2A:00.0", 75.0, 33)],
    "topology": {"method": "nvml", "pairs": [{"gpu_a": 0, "gpu_b": 1, "link_class": "NV18", "nvlink_count": 18,
                                              "numa_affinity_a": 0, "numa_affinity_b": 0}]},
    "xid_events": {"source": "journalctl -k", "events": [
        {"xid": 79, "pci_bus_id": "00000000:2A:00.0", "message": "GPU has fallen off the bus. <b>", "time": "2026-11-29T23:01:02"}]},
    "errors": [],
}
# GPU 1 in the field names the health probe writes today (the summary reads both spellings).
H200_DATA["gpus"][1].update({
    "pci": {"bus_id": "00000000:2A:00.0", "device_id": "0x233510de"}, "temperature": {"gpu_c": 33, "shutdown_threshold_c": 92},
    "clocks": {"sm_mhz": 1980, "max_sm_mhz": 1980, "memory_mhz": 3201, "max_memory_mhz": 3201},
    "pcie": {"current_link_gen": 5, "max_link_gen": 5, "current_link_width": 8, "max_link_width": 16},
    "ecc": {"mode_current": "enabled", "mode_pending": "enabled", "volatile_uncorrected_count": 2},
    "memory": {"total_mib": 143771, "used_mib": 0, "free_mib": 143771},
})
for key in ("pci_bus_id", "temperature_c", "memory_total_mib", "memory_used_mib"):
    del H200_DATA["gpus"][1][key]


def envelope(host, probe="health", status="ok", reason="", data=None, **extra):
    document = {
        "schema_version": "1", "probe": probe, "host": host, "status": status,
        "started": "2026-11-30T02:00:00+00:00", "duration_s": 3.2,
        "command": ["/usr/bin/python3", "/tmp/ansible-tmp-1/health.py", "--params", "/tmp/ansible-tmp-1/p.json",
                    "--out", "/tmp/ansible-tmp-1/out.json"],
        "environment": {"python_version": "3.12.3", "driver_version": "580.159.04", "torch_version": "2.11.0+cu130"},
        "reason": reason, "data": copy.deepcopy(data if data is not None else {}),
        "run_id": RUN_ID, "collection_version": "0.1.0", "probe_sha256": "ab" * 32,
    }
    document.update(extra)
    return document


class FakeRun:
    envelope = staticmethod(envelope)

    def __init__(self, root):
        self.results = root / "results"
        self.run_dir = self.results / RUN_ID
        self.run_dir.mkdir(parents=True)

    def write(self, host, probe, content):
        directory = self.run_dir / host_dir_name(host)
        directory.mkdir(exist_ok=True)
        text = content if isinstance(content, str) else json.dumps(content)
        (directory / (probe + ".json")).write_text(text, encoding="utf-8")
        return directory


@pytest.fixture
def fleet(tmp_path):
    """Six hosts: healthy H200, no GPU, probe error, unparsable file, never reached, and a hostile name."""
    run = FakeRun(tmp_path)
    run.write("gpu-a01", "health", envelope("gpu-a01", data=H200_DATA))
    run.write("cpu-b01", "health", envelope(
        "cpu-b01", status="unavailable", reason="no NVIDIA GPU: /dev/nvidia0 does not exist and NVML did not load",
        data={"platform": {"hostname": "cpu-b01", "kernel_release": "6.8.0-40-generic"},
              "driver": {"unavailable": "NVML could not be loaded: libnvidia-ml.so.1: cannot open shared object file"},
              "cuda_init": {"unavailable": "torch reports no CUDA device"},
              "gpus": [], "topology": {"unavailable": "no GPUs"}, "xid_events": {"unavailable": "dmesg: Operation not permitted"},
              "errors": []}))
    run.write("gpu-c01", "health", envelope(
        "gpu-c01", status="error", reason="the probe raised RuntimeError: CUDA driver initialisation failed",
        data={"traceback": "Traceback (most recent call last):\n  File \"health.py\", line 1\nRuntimeError: boom"}))
    broken = run.write("gpu-d01", "health", '{"schema_version": "1", "status": "ok", "data": {')
    (broken / "health.raw").write_bytes(b"\x00\xffnot json")
    run.write(EVIL_HOST, "health", envelope(EVIL_HOST, status="partial", reason="section topology failed: <script>x</script>",
                                            data={"gpus": [{"index": 0, "name": "<img src=x onerror=alert(2)>|pipe"}]}))
    run.evil_host = EVIL_HOST
    run.health_data = H200_DATA
    run.expected = ["gpu-a01", "cpu-b01", "gpu-c01", "gpu-d01", "gpu-e01", EVIL_HOST]
    run.groups = {"gpu-a01": ["rack1"], "cpu-b01": ["rack1"], "gpu-c01": ["rack2"], "gpu-e01": ["rack2"]}
    return run
