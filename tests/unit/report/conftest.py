"""Fake run directories: realistic envelopes written where the probe action plugin would write them."""
from __future__ import annotations

import copy
import json

import pytest

from ansible_collections.gpufleet.validation.plugins.plugin_utils.result_paths import host_dir_name

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


PREVIOUS_RUN_ID = "20261129T020000Z-000001"
UUID0, UUID1 = H200_DATA["gpus"][0]["uuid"], H200_DATA["gpus"][1]["uuid"]
MEMBW_STATISTICS = {"median": 4010.0, "mad": 6.0, "count": 3, "unit": "GB/s"}


def _checks(host, *specs):
    from ansible_collections.gpufleet.validation.plugins.plugin_utils.judge.model import Check

    return [Check(host=host, **spec) for spec in specs]


def _health_pass(host):
    return [{"id": "health.cuda_init", "probe": "health", "status": "pass", "reason": "CUDA initialised in a fresh process.",
             "value": True, "reference": True, "reference_source": "rule", "threshold": "== true"}]


def _membw(host, value, status, fleet_status, reason):
    return [
        {"id": "membw.plateau_gbps", "probe": "membw", "status": "pass", "value": value, "unit": "GB/s", "reference": 4800,
         "reference_source": "baselines/h200-sxm.yml: NVIDIA H200 datasheet", "threshold": ">= 70 % of reference",
         "reason": "the plateau is %s %% of the datasheet peak" % round(100 * value / 4800)},
        {"id": "fleet.membw.plateau_gbps", "probe": "membw", "status": fleet_status, "value": value, "unit": "GB/s",
         "reference": 4010.0, "reference_source": "fleet median of 3 h200-sxm hosts", "threshold": "within 3.5 MAD of the median",
         "reason": reason},
    ]


def build_judgement(evil_host):
    """Hosts of the fleet fixture, judged by hand: two fail, two error, one unreachable, one warn, two pass."""
    from ansible_collections.gpufleet.validation.plugins.plugin_utils.judge.model import Check, FleetJudgement, HostVerdict

    def verdict(host, name, checks, reasons, sku="h200-sxm", sku_reason="from the GPU name NVIDIA H200 and 143771 MiB", groups=()):
        return HostVerdict(host=host, verdict=name, reasons=reasons, checks=checks, sku=sku, sku_reason=sku_reason,
                           groups=list(groups))

    a01 = _checks("gpu-a01", *_health_pass("gpu-a01"), *_membw("gpu-a01", 4012.5, "pass", "pass", "within the fleet"),
                  {"id": "health.volatile_uncorrected_count", "probe": "health", "status": "pass", "gpu_index": 0,
                   "gpu_uuid": UUID0, "value": 0, "reference": 0, "reference_source": "rule", "threshold": "== 0",
                   "reason": "no uncorrected ECC error"},
                  {"id": "health.volatile_uncorrected_count", "probe": "health", "status": "fail", "gpu_index": 1,
                   "gpu_uuid": UUID1, "value": 2, "reference": 0, "reference_source": "rule", "threshold": "== 0",
                   "reason": "GPU 1 has 2 volatile uncorrected ECC errors: drain it and run the field diagnostic"},
                  {"id": "health.pcie_link_width", "probe": "health", "status": "warn", "gpu_index": 1, "gpu_uuid": UUID1,
                   "value": 8, "reference": 16, "reference_source": "the GPU's maximum", "threshold": "== maximum",
                   "reason": "GPU 1 runs its PCIe link at x8 of x16: reseat it"})
    a02 = _checks("gpu-a02", *_health_pass("gpu-a02"),
                  *_membw("gpu-a02", 3500.0, "pass", "warn", "3500 GB/s is 8.5 MAD below the fleet median 4010 GB/s"),
                  {"id": "drift.membw.plateau_gbps", "probe": "membw", "status": "warn", "value": 3500.0, "unit": "GB/s",
                   "reference": 4005.0, "reference_source": "previous run " + PREVIOUS_RUN_ID, "threshold": "within 5 %",
                   "reason": "the plateau fell 12.6 % since the previous run"})
    a03 = _checks("gpu-a03", *_health_pass("gpu-a03"), *_membw("gpu-a03", 4010.0, "pass", "pass", "within the fleet"))
    evil = _checks(evil_host,
                   {"id": "health.gpu_name", "probe": "health", "status": "fail", "gpu_index": 0, "value": "<img src=x onerror=alert(2)>|pipe",
                    "reference": "NVIDIA H200", "reference_source": "inventory <expected_sku>", "threshold": "== reference",
                    "reason": "GPU 0 is named \"<img src=x onerror=alert(2)>|pipe\", not <b>NVIDIA H200</b>"},
                   {"id": "health.topology", "probe": "health", "status": "skip", "reason": "section topology failed: <script>x</script>"})
    hosts = {
        "gpu-a01": verdict("gpu-a01", "fail", a01, [a01[4].reason, a01[5].reason], groups=["rack1"]),
        "gpu-a02": verdict("gpu-a02", "warn", a02, [a02[2].reason, a02[3].reason], groups=["rack1"]),
        "gpu-a03": verdict("gpu-a03", "pass", a03, [], groups=["rack1"]),
        "cpu-b01": verdict("cpu-b01", "pass", _checks("cpu-b01", {
            "id": "health.cuda_init", "probe": "health", "status": "skip", "reason": "no NVIDIA GPU on this host"}), [],
            sku=None, sku_reason="no NVIDIA GPU was found: nothing to identify", groups=["rack1"]),
        "gpu-c01": verdict("gpu-c01", "error", _checks("gpu-c01", {
            "id": "health.probe_status", "probe": "health", "status": "error",
            "reason": "the probe raised RuntimeError: CUDA driver initialisation failed"}),
            ["the probe raised RuntimeError: CUDA driver initialisation failed"], groups=["rack2"]),
        "gpu-d01": verdict("gpu-d01", "error", [], ["health: result file unreadable"], sku=None, sku_reason="no readable result"),
        "gpu-e01": verdict("gpu-e01", "unreachable", [], ["ssh: connect to host gpu-e01 port 22: Connection refused"],
                           sku=None, sku_reason="the host was not reached", groups=["rack2"]),
        evil_host: verdict(evil_host, "fail", evil, [evil[0].reason]),
    }
    unmatched = [Check(id="gemm.fp8_tflops", host="", probe="gemm", status="warn",
                       reason="rule gemm.fp8_tflops matched no result: no host ran the gemm probe")]
    return FleetJudgement(run_id=RUN_ID, hosts=hosts, unmatched_rules=unmatched, previous_run_id=PREVIOUS_RUN_ID,
                          fleet_statistics={"h200-sxm": {"membw.plateau_gbps": dict(MEMBW_STATISTICS)}})


@pytest.fixture
def judged(fleet):
    """The fleet plus two more H200 hosts with a membw result, and a hand-made judgement of every host."""
    for host, plateau in (("gpu-a01", 4012.5), ("gpu-a02", 3500.0), ("gpu-a03", 4010.0)):
        if host != "gpu-a01":
            fleet.write(host, "health", envelope(host, data=H200_DATA))
        fleet.write(host, "membw", envelope(host, probe="membw", data={"plateau_gbps": plateau, "cv_pct": 0.8}))
    fleet.expected = fleet.expected + ["gpu-a02", "gpu-a03"]
    fleet.groups = dict(fleet.groups, **{"gpu-a02": ["rack1"], "gpu-a03": ["rack1"]})
    fleet.judgement = build_judgement(fleet.evil_host)
    fleet.build_judgement = build_judgement
    fleet.previous_run_id = PREVIOUS_RUN_ID
    fleet.uuid1 = UUID1
    return fleet
