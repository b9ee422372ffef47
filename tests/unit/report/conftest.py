"""Fake run directories: realistic envelopes written where the probe action plugin would write them."""
from __future__ import annotations

import copy
import json
import os
import shutil
import types

import pytest

from ansible_collections.gpufleet.validation.plugins.plugin_utils.store.paths import host_dir_name

RUN_ID = "20261130T020000Z-123456"
EVIL_HOST = "<script>alert(1)</script>../x"


def _gpu(index, uuid, bus, draw_w, temperature_c):
    """One H200 as the health probe writes it (the shape of tests/fixtures/health_h200x2_ok_by_the_action.json)."""
    return {
        "index": index, "name": "NVIDIA H200", "uuid": uuid, "serial": "165302300%04d" % index, "minor_number": index,
        "board_part_number": "692-2G520-0282-000", "vbios_version": "96.00.A5.00.1A", "inforom_image_version": "G520.0282.02.02",
        "pci": {"bus_id": bus, "device_id": "0x233510de", "subsystem_id": "0x18bf10de"},
        "memory": {"total_mib": 143771, "used_mib": 512, "free_mib": 143259},
        "bar1": {"total_mib": 262144, "used_mib": 1, "free_mib": 262143},
        "clocks": {"sm_mhz": 345, "max_sm_mhz": 1980, "memory_mhz": 2619, "max_memory_mhz": 3201, "graphics_mhz": 345,
                   "max_graphics_mhz": 1980, "applications_graphics_mhz": 1980, "applications_memory_mhz": 3201},
        "clock_event_reasons": {"mask": 1, "mask_hex": "0x0000000000000001", "method": "nvmlDeviceGetCurrentClocksEventReasons",
                                "names": ["gpu_idle"], "slowdown_active": False},
        "power": {"draw_w": draw_w, "limit_w": 700.0, "default_limit_w": 700.0, "enforced_limit_w": 700.0, "min_limit_w": 200.0,
                  "max_limit_w": 700.0},
        "temperature": {"gpu_c": temperature_c, "slowdown_threshold_c": 89, "shutdown_threshold_c": 95, "gpu_max_threshold_c": 87,
                        "memory_max_threshold_c": 95},
        "fan_speed_percent": 0,
        "ecc": {"mode_current": "enabled", "mode_pending": "enabled", "volatile_corrected_count": 0, "volatile_uncorrected_count": 0,
                "aggregate_corrected_count": 0, "aggregate_uncorrected_count": 0},
        "retired_pages": {"single_bit_ecc_count": 0, "double_bit_ecc_count": 0, "pending": False},
        "remapped_rows": {"pending": False, "failure": False, "correctable_count": 0, "uncorrectable_count": 0},
        "pcie": {"current_link_gen": 1, "max_link_gen": 5, "gpu_max_link_gen": 5, "current_link_width": 16, "max_link_width": 16},
        "persistence_mode": "enabled",
        "compute_mode": "default",
        "mig_mode": {"unavailable": "MIG mode could not be read: NVMLError_NotSupported: Not Supported"},
        "numa": {"nvml_numa_node": 0, "sysfs_numa_node": 0, "local_cpulist": "0-55"},
        "nvlink": {"links": [{"link": link, "state": "active", "version_code": 6, "version": "4.0",
                              "remote_pci_bus_id": "ffffffff:ff:ff.0", "remote_device_type": "switch"} for link in range(3)],
                   "active_count": 18, "supported_count": 18},
        "processes": {"compute": [{"pid": 4242 + index, "name": "python3", "used_memory_mib": 498.0}], "graphics": []},
    }


def _node(path, major, minor, drivers, expected_majors, **fields):
    node = {"path": path, "kind": "char", "major": major, "minor": minor, "mode": "0666", "drivers_for_major": drivers,
            "expected_drivers": drivers, "expected_majors": expected_majors, "major_matches": major in expected_majors,
            "readable_writable": True, "open_rw": "ok"}
    node.update(fields)
    return node


# A healthy-looking H200 host with what the dossier must flag: GPU 1 has 2 uncorrected ECC errors and an x8 link,
# /dev/nvidia-uvm has another major than /proc/devices gives nvidia-uvm, the kernel logged an XID 79. Valid against
# health.schema.json, as every result that reaches the report is (tests/unit/test_fixtures_valid.py holds it to that).
H200_DATA = {
    "platform": {
        "hostname": "gpu-a01", "kernel_release": "6.14.0-36-generic", "kernel_version": "#36-Ubuntu SMP PREEMPT_DYNAMIC",
        "architecture": "x86_64",
        "cmdline": "BOOT_IMAGE=/vmlinuz root=UUID=abc ro quiet | splash",
        "os_release": {"ID": "ubuntu", "PRETTY_NAME": "Ubuntu 24.04.3 LTS", "VERSION_ID": "24.04"},
        "cpu": {"model": "Intel(R) Xeon(R) Platinum 8480+", "logical_count": 112, "usable_count": 112, "socket_count": 2},
        "memory_total_mib": 2063524,
        "numa_nodes": [{"node": 0, "cpulist": "0-55", "cpu_count": 56, "memory_total_mib": 1031762},
                       {"node": 1, "cpulist": "56-111", "cpu_count": 56, "memory_total_mib": 1031762}],
        "numa_balancing": {"unavailable": "/proc/sys/kernel/numa_balancing is missing (a kernel without NUMA balancing)"},
        "cpufreq": {"cpu_count": 112, "drivers": {"intel_pstate": 112}, "governors": {"performance": 112}},
        "container": {"in_container": True, "kind": "lxc", "hints": ["/proc/1/environ names container=lxc"],
                      "root_filesystem_type": "ext4"},
        "iommu": {"cmdline_options": {}, "iommu_group_count": 0},
        "relevant_environment": {"CUDA_VISIBLE_DEVICES": "0,1"},
    },
    "software": {"nvml_initialized": True, "nvml_reason": None, "nvidia_ml_py_version": "13.610.43",
                 "kernel_module_version": "580.159.04", "driver_version": "580.159.04", "cuda_driver_version": "13.0",
                 "nvml_version": "13.580.159.04"},
    "cuda_init": {"python": "/usr/bin/python3", "timeout_s": 120.0, "timed_out": False, "returncode": 0, "signal": None,
                  "wall_s": 2.01, "stderr_tail": "", "ok": True, "stage": "done", "reason": "", "error": None, "duration_s": 1.734,
                  "torch_version": "2.11.0+cu130", "torch_cuda_version": "13.0", "nccl_version": "2.28.9", "cudnn_version": 91900,
                  "device_count": 2,
                  "devices": [{"index": index, "ok": True, "error": None, "duration_s": 0.2, "name": "NVIDIA H200",
                               "total_memory_mib": 143155, "compute_capability": "9.0"} for index in range(2)]},
    "device_nodes": {
        "proc_devices_nvidia_majors": {"195": ["nvidia", "nvidiactl"], "509": ["nvidia-uvm"]},
        "nodes": [
            _node("/dev/nvidia0", 195, 0, ["nvidia", "nvidiactl"], [195]),
            _node("/dev/nvidia1", 195, 1, ["nvidia", "nvidiactl"], [195]),
            _node("/dev/nvidia-uvm", 504, 0, ["nvidia-uvm"], [509], drivers_for_major=[]),
        ],
        "mismatches": [{"path": "/dev/nvidia-uvm",
                        "sentence": "/dev/nvidia-uvm has major 504 but /proc/devices says nvidia-uvm is 509"}],
        "missing_nodes": [], "gpu_node_count": 2, "gpu_node_minors": [0, 1], "nvml_gpu_count": 2,
        "gpu_node_count_matches_nvml": True,
    },
    "cgroup_devices": {"unavailable": "cgroup v2 device rules are an eBPF program and cannot be read"},
    "gpus": [_gpu(0, "GPU-0a1b2c3d-1111-2222-3333-444455556666", "0000:18:00.0", 73.456, 31),
             _gpu(1, "GPU-9f8e7d6c-1111-2222-3333-444455556666", "0000:2a:00.0", 75.0, 33)],
    "topology": {"method": "nvml", "gpu_count": 2,
                 "pairs": [{"gpu_a": 0, "gpu_b": 1, "method": "nvml", "common_ancestor": "SYS", "link_class": "NV18",
                            "nvlink_count": 18, "nvlink_via": "nvswitch", "numa_node_a": 0, "numa_node_b": 0,
                            "p2p": {"read": "ok", "write": "ok", "atomics": "ok", "nvlink": "ok"}}]},
    "kernel_log": {"source": "journalctl -k", "lines_read": 1200, "attempts": [], "hardware_xid_count": 1, "xid_counts": {"79": 1},
                   "xid_events": [{"xid": 79, "pci_bus_id": "0000:2a:00.0", "gpu_index": 1, "pid": None, "process_name": None,
                                   "message": "GPU has fallen off the bus. <b>", "hardware": True, "time": "2026-11-29T23:01:02"}]},
    "errors": [],
}
# GPU 1 differs where the dossier must show it: clocks at their maximum, no memory used, 2 uncorrected ECC errors, an x8 link.
H200_DATA["gpus"][1].update({
    "temperature": dict(H200_DATA["gpus"][1]["temperature"], gpu_c=33),
    "clocks": dict(H200_DATA["gpus"][1]["clocks"], sm_mhz=1980, max_sm_mhz=1980, memory_mhz=3201, max_memory_mhz=3201),
    "pcie": dict(H200_DATA["gpus"][1]["pcie"], current_link_gen=5, max_link_gen=5, current_link_width=8, max_link_width=16),
    "ecc": dict(H200_DATA["gpus"][1]["ecc"], volatile_uncorrected_count=2),
    "memory": {"total_mib": 143771, "used_mib": 0, "free_mib": 143771},
})
NO_NVML = "NVML could not be loaded: libnvidia-ml.so.1: cannot open shared object file"
# A host without an NVIDIA GPU: the health probe is unavailable and says why, with what it could read.
NO_GPU_DATA = {
    "platform": dict(copy.deepcopy(H200_DATA["platform"]), hostname="cpu-b01", kernel_release="6.8.0-40-generic",
                     relevant_environment={}),
    "software": {"nvml_initialized": False, "nvml_reason": NO_NVML, "nvidia_ml_py_version": "13.610.43",
                 "kernel_module_version": {"unavailable": "no NVIDIA kernel module loaded: /proc/driver/nvidia is missing"},
                 "driver_version": {"unavailable": NO_NVML}, "cuda_driver_version": {"unavailable": NO_NVML},
                 "nvml_version": {"unavailable": NO_NVML}},
    "gpus": [],
    "topology": {"unavailable": "no GPUs"},
    "device_nodes": {"proc_devices_nvidia_majors": {}, "nodes": [], "mismatches": [], "missing_nodes": [], "gpu_node_count": 0,
                     "gpu_node_minors": [], "nvml_gpu_count": {"unavailable": NO_NVML},
                     "gpu_node_count_matches_nvml": {"unavailable": NO_NVML}},
    "cgroup_devices": {"unavailable": "cgroup v2 device rules are an eBPF program and cannot be read"},
    "cuda_init": {"unavailable": "torch reports no CUDA device"},
    "kernel_log": {"unavailable": "dmesg: Operation not permitted"},
    "errors": [],
}
EVIL_GPU_NAME = "<img src=x onerror=alert(2)>|pipe"
TOPOLOGY_FAILED = "section topology failed: <script>x</script>"
# A hostile host: a partial result (its topology section raised) whose GPU name is markup.
EVIL_DATA = dict(copy.deepcopy(H200_DATA), gpus=[dict(copy.deepcopy(H200_DATA["gpus"][0]), name=EVIL_GPU_NAME)],
                 topology={"unavailable": TOPOLOGY_FAILED}, errors=[{"section": "topology", "error": "<script>x</script>"}])


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


# The fleet's files that are broken on purpose, relative to the run directory: not probe results.
UNREADABLE_ON_PURPOSE = ("gpu-d01/health.json",)


@pytest.fixture
def fleet(tmp_path):
    """Six hosts: healthy H200, no GPU, probe error, unparsable file, never reached, and a hostile name."""
    return write_fleet(FakeRun(tmp_path))


def write_fleet(run):
    """The fleet fixture's run: its results written into run (a FakeRun)."""
    run.write("gpu-a01", "health", envelope("gpu-a01", data=H200_DATA))
    run.write("cpu-b01", "health", envelope(
        "cpu-b01", status="unavailable", reason="no NVIDIA GPU: /dev/nvidia0 does not exist and NVML did not load",
        data=NO_GPU_DATA))
    run.write("gpu-c01", "health", envelope(
        "gpu-c01", status="error", reason="the probe raised RuntimeError: CUDA driver initialisation failed",
        data={"traceback": "Traceback (most recent call last):\n  File \"health.py\", line 1\nRuntimeError: boom"}))
    broken = run.write("gpu-d01", "health", '{"schema_version": "1", "status": "ok", "data": {')
    (broken / "health.raw").write_bytes(b"\x00\xffnot json")
    run.write(EVIL_HOST, "health", envelope(EVIL_HOST, status="partial", reason=TOPOLOGY_FAILED, data=EVIL_DATA))
    run.evil_host = EVIL_HOST
    run.health_data = H200_DATA
    run.expected = ["gpu-a01", "cpu-b01", "gpu-c01", "gpu-d01", "gpu-e01", EVIL_HOST]
    run.groups = {"gpu-a01": ["rack1"], "cpu-b01": ["rack1"], "gpu-c01": ["rack2"], "gpu-e01": ["rack2"]}
    return run


PREVIOUS_RUN_ID = "20261129T020000Z-000001"
UUID0, UUID1 = H200_DATA["gpus"][0]["uuid"], H200_DATA["gpus"][1]["uuid"]
MEMBW_STATISTICS = {"median": 4010.0, "mad": 6.0, "count": 3, "unit": "GB/s"}
MEMBW_SIZES_MIB = (256, 1024, 4096)


def membw_data(plateau_gbps, cv_pct=0.8):
    """The membw probe on GPU 0 of an H200, its plateau at plateau_gbps, its repeats spread by cv_pct (valid data)."""
    sweep = [{"size_mib": size, "buffer_bytes": size << 20, "status": "measured", "reason": "", "iterations": 100,
              "time_per_copy_s": 2 * (size << 20) / plateau_gbps / 1e9, "bandwidth_gbps": plateau_gbps, "copy_verified": True,
              "verified_elements": 1048577, "regime": "plateau"} for size in MEMBW_SIZES_MIB]
    return {
        "method": {"operation": "dst.copy_(src), both buffers on the measured device", "bytes_counted": "read + written (2 x buffer size per copy)",
                   "bandwidth_definition": "bandwidth_gbps = 2 x buffer_bytes / time_per_copy_s / 1e9",
                   "timing": "CUDA events around the back-to-back copies", "verification": "once per size",
                   "plateau_rule": "the longest run of sizes within tolerance_pct of its median",
                   "gpu_state": "an NVML snapshot halfway through the middle repeat"},
        "plan": {"name": "gpu-default", "quick": False, "device_request": "auto", "sizes_mib": list(MEMBW_SIZES_MIB),
                 "dtype": "float32", "element_bytes": 4, "target_point_ms": 100.0, "warmup_iterations": 3, "min_iterations": 2,
                 "max_iterations": 20000, "repeats": 3, "tolerance_pct": 3.0, "min_plateau_points": 2, "l2_multiple": 2.0,
                 "cv_warn_pct": 5.0, "safety_margin_mib": 1024.0, "safety_margin_pct": 5.0, "verify_sample_elements": 1048576},
        "devices": [{
            "device": {"kind": "cuda", "index": 0, "name": "NVIDIA H200", "uuid": UUID0, "memory_total_mib": 143155,
                       "compute_capability": "9.0"},
            "status": "ok", "error": None, "problems": [], "free_memory_bytes_at_start": 149557477376,
            "last_level_cache_bytes": 62914560, "last_level_cache_source": "L2 from torch.cuda.get_device_properties",
            "sweep": sweep,
            "plateau": {"found": True, "plateau_gbps": plateau_gbps, "sizes_mib": list(MEMBW_SIZES_MIB), "min_points": 2,
                        "tolerance_pct": 3.0, "min_size_mib": 120.0, "max_deviation_pct": 0.0, "includes_largest_size": True,
                        "reason": "3 consecutive size(s) within 3 % of their median"},
            "headline": {"bandwidth_gbps": plateau_gbps, "source": "plateau", "sizes_mib": list(MEMBW_SIZES_MIB), "no_plateau": False},
            "repeats": {"size_mib": 4096, "iterations": 50, "bandwidths_gbps": [plateau_gbps] * 3,
                        "times_per_copy_s": [sweep[-1]["time_per_copy_s"]] * 3, "median_gbps": plateau_gbps, "cv_pct": cv_pct,
                        "cv_definition": "sample standard deviation (n - 1) of the repeat bandwidths over their mean, in percent",
                        "cv_warn_pct": 5.0, "cv_warn": cv_pct > 5.0,
                        "gpu_state": {"unavailable": "NVML is not usable: nvidia-ml-py is not installed"}},
        }],
        "errors": [],
    }


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
    return add_judged_hosts(fleet)


def add_judged_hosts(fleet):
    """The judged fixture's run: the fleet's, with its membw results, its two more hosts and their judgement."""
    for host, plateau in (("gpu-a01", 4012.5), ("gpu-a02", 3500.0), ("gpu-a03", 4010.0)):
        if host != "gpu-a01":
            fleet.write(host, "health", envelope(host, data=H200_DATA))
        fleet.write(host, "membw", envelope(host, probe="membw", data=membw_data(plateau)))
    fleet.expected = fleet.expected + ["gpu-a02", "gpu-a03"]
    fleet.groups = dict(fleet.groups, **{"gpu-a02": ["rack1"], "gpu-a03": ["rack1"]})
    fleet.judgement = build_judgement(fleet.evil_host)
    fleet.build_judgement = build_judgement
    fleet.previous_run_id = PREVIOUS_RUN_ID
    fleet.uuid1 = UUID1
    return fleet


@pytest.fixture
def judge_recorded(tmp_path):
    """judge_recorded(recorded run directory, **judge_run's options): its localhost copied into a fresh results
    directory and judged by judge_run; a namespace of .results, .run_dir, .run (as loaded), .judgement, and .expected
    and .groups (render_run's arguments)."""
    from ansible_collections.gpufleet.validation.plugins.plugin_utils.run_judgement import judge_run
    from ansible_collections.gpufleet.validation.plugins.plugin_utils.store.stored_run import load_run

    def judge(recorded, **options):
        results = tmp_path / ("results-%s" % os.path.basename(recorded))
        run_dir = results / os.path.basename(recorded)
        shutil.copytree(os.path.join(recorded, "localhost"), run_dir / "localhost")
        expected, groups = ["localhost"], {"localhost": ["ungrouped"]}
        run = load_run(str(run_dir), expected, groups)
        return types.SimpleNamespace(results=results, run_dir=run_dir, run=run, judgement=judge_run(run, str(results), {}, **options),
                                     expected=expected, groups=groups)
    return judge
