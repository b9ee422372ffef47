"""The faults benchmarks/verdict_scorecard.py injects into a copy of a recorded run, each a function named in the corpus
(benchmarks/verdict_scorecard.yaml) by its name.

An injection gets the Bench (the copied run, its one host's directory, the judge's inputs) and edits the copy's files,
or the rules, overrides or baselines folder the case judges with. Each edit is one the issue or a fault test names; the
values it writes are the fault's, never a guess at what the judge will say.
"""
from __future__ import annotations

import copy
import json
import os
import shutil
from dataclasses import dataclass, field
from typing import Any, Callable, Dict, List, Optional

import yaml

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SHIPPED_BASELINES = os.path.join(ROOT, "baselines")
SCHEMAS = os.path.join(ROOT, "schemas")
# What the rig's leftover job held and was named (issue 44: "a process holding 62.8 GiB", "python3 (pid 2172)").
LEFTOVER_JOB = {"pid": 2172, "name": "python3", "used_memory_mib": 64307.2}
# The rig's burst beside that job: 301 TFLOP/s, 37.9 % of the known-good, the power cap engaged in every window.
BUSY_BURST_SHARE = 0.379
CAPPED = "the software power cap engaged inside 3 of 3 burst windows"
# The red team's host (issue 44): NVML lists 8 GPUs while the PCI bus section holds the one at the rig's address.
EXTRA_ADDRESSES = ["0000:00:%02x.0" % slot for slot in range(7, 14)]
SPARSE_BYTES = 2 * 1024 ** 3
USER_BASELINES = "my-baselines"


@dataclass
class Bench:
    """One case's copy of a recorded run and what the judge is given beside it."""

    results_dir: str
    run_path: str
    host_path: str
    host: str
    profile: Optional[str] = None
    custom_profiles: Optional[Dict[str, List[str]]] = None
    overrides: Dict[str, Any] = field(default_factory=dict)   # this host's gpufleet_rule_overrides, given now
    baselines_dir: Optional[str] = None                       # gpufleet_baselines_dir (None: the shipped baselines/)
    rules_path: Optional[str] = None                          # gpufleet_rules_file (None: the collection's, docs/rules.yaml)

    @property
    def scratch(self) -> str:
        """A folder beside the results (a user's baselines, another host's files): never read as a host of the run."""
        path = os.path.join(os.path.dirname(self.results_dir), "beside")
        os.makedirs(path, exist_ok=True)
        return path

    def result_path(self, probe: str) -> str:
        return os.path.join(self.host_path, probe + ".json")

    def read(self, probe: str) -> Dict[str, Any]:
        with open(self.result_path(probe), encoding="utf-8") as handle:
            return json.load(handle)

    def write(self, probe: str, envelope: Dict[str, Any]) -> None:
        with open(self.result_path(probe), "w", encoding="utf-8") as handle:
            json.dump(envelope, handle, indent=2, sort_keys=True)

    def edit(self, probe: str, change: Callable[[Dict[str, Any]], None]) -> None:
        envelope = self.read(probe)
        change(envelope["data"])
        self.write(probe, envelope)


def _scale_rates(node: Any, factor: float, suffixes=("gbps",)) -> None:
    """Every number (or list of numbers) under a key ending in one of suffixes, multiplied by factor, at any depth."""
    if isinstance(node, dict):
        for key, value in node.items():
            if key.endswith(suffixes) and isinstance(value, (int, float)) and not isinstance(value, bool):
                node[key] = round(value * factor, 3)
            elif key.endswith(suffixes) and isinstance(value, list):
                node[key] = [round(item * factor, 3) if isinstance(item, (int, float)) and not isinstance(item, bool) else item
                             for item in value]
            else:
                _scale_rates(value, factor, suffixes)
    elif isinstance(node, list):
        for item in node:
            _scale_rates(item, factor, suffixes)


def _copy_baselines(bench: Bench) -> str:
    folder = os.path.join(bench.scratch, USER_BASELINES)
    shutil.copytree(SHIPPED_BASELINES, folder)
    bench.baselines_dir = folder
    return folder


# --- the injections, by the names the corpus uses -------------------------------------------------------------------

def none(bench: Bench) -> None:
    """The recording as it was stored."""
    del bench


def half_speed_hbm(bench: Bench) -> None:
    """Every HBM bandwidth the membw probe recorded, halved (issue 44: an H100 whose HBM runs at half speed)."""
    bench.edit("membw", lambda data: _scale_rates(data, 0.5))


def gpu_20pct_slow(bench: Bench) -> None:
    """Every GPU rate 20 % low: membw, hostbw and both gemm states (test_verdict_matrix.scaled(0.8))."""
    bench.edit("membw", lambda data: _scale_rates(data, 0.8))
    bench.edit("hostbw", lambda data: _scale_rates(data, 0.8))
    bench.edit("gemm", lambda data: _scale_gemm(data, 0.8))


def _scale_gemm(data: Dict[str, Any], factor: float) -> None:
    for device in data["devices"]:
        for rate in device["dtypes"].values():
            for method in ("burst", "sustained"):
                state = (rate.get("power_states") or {}).get(method) if isinstance(rate, dict) else None
                if isinstance(state, dict) and "tflops" in state:
                    state["tflops"] = round(state["tflops"] * factor, 3)
                    state["repeats_tflops"] = [round(value * factor, 3) for value in state["repeats_tflops"]]


def lowered_power_limit(bench: Bench) -> None:
    """A 500 W power limit on a 700 W GPU, every rate 20 % low (test_verdict_matrix.lowered_power_limit)."""
    gpu_20pct_slow(bench)

    def health(data):
        for gpu in data["gpus"]:
            gpu["power"]["enforced_limit_w"] = gpu["power"]["limit_w"] = 500.0

    def gemm(data):
        for device in data["devices"]:
            for rate in device["dtypes"].values():
                state = (rate.get("power_states") or {}).get("sustained") if isinstance(rate, dict) else None
                if isinstance(state, dict):
                    state["power_limit_w"] = 500.0
    bench.edit("health", health)
    bench.edit("gemm", gemm)


def noisy_burst(bench: Bench) -> None:
    """bf16 burst repeats 640, 700, 760 TFLOP/s around the 85 % threshold (test_verdict_matrix.noisy_burst)."""
    def gemm(data):
        burst = data["devices"][0]["dtypes"]["bf16"]["power_states"]["burst"]
        burst["repeats_tflops"] = [640.0, 700.0, 760.0]
        burst["tflops"] = 700.0
    bench.edit("gemm", gemm)


def links_down(bench: Bench) -> None:
    """Every NVLink of every GPU inactive (test_verdict_matrix.links_down)."""
    def health(data):
        for gpu in data["gpus"]:
            for link in gpu["nvlink"]["links"]:
                link["state"] = "inactive"
            gpu["nvlink"]["active_count"] = 0
    bench.edit("health", health)


CPU_MACHINE_HEALTH = os.path.join(ROOT, "docs", "examples", "cpu", "localhost_quick", "20261201T214315Z-756521", "localhost",
                                  "health.json")


def cpu_only(bench: Bench) -> None:
    """No NVIDIA driver (test_verdict_matrix.cpu_only): health as the CPU machine's recorded health ended (unavailable,
    "no NVIDIA kernel module loaded"), membw measured on the CPU, the other results gone."""
    with open(CPU_MACHINE_HEALTH, encoding="utf-8") as handle:
        recorded = json.load(handle)
    health = bench.read("health")
    health.update(status=recorded["status"], reason=recorded["reason"], data=recorded["data"])
    bench.write("health", health)

    def membw(data):
        for entry in data["devices"]:
            entry["device"] = dict(entry["device"], kind="cpu", uuid={"unavailable": "a CPU has no UUID"})
    bench.edit("membw", membw)
    for name in os.listdir(bench.host_path):
        probe = name[:-5] if name.endswith(".json") else ""
        if probe and probe not in ("health", "membw", "inputs", "writer"):
            os.unlink(os.path.join(bench.host_path, name))


def ecc_uncorrectable(bench: Bench) -> None:
    """3 volatile uncorrectable ECC errors on GPU 0 (tests/unit/judge/test_health_judgement.py)."""
    bench.edit("health", lambda data: data["gpus"][0]["ecc"].update(volatile_uncorrected_count=3))


def remapped_row_pending(bench: Bench) -> None:
    """A row remapping pending on GPU 0 (tests/unit/judge/test_health_judgement.py)."""
    bench.edit("health", lambda data: data["gpus"][0]["remapped_rows"].update(pending=True))


def pcie_x8(bench: Bench) -> None:
    """GPU 0's PCIe link trained at x8 of x16 (tests/unit/judge/test_health_judgement.py)."""
    bench.edit("health", lambda data: data["gpus"][0]["pcie"].update(current_link_width=8))


def xid_79(bench: Bench) -> None:
    """Xid 79, "GPU has fallen off the bus", on GPU 0 in the kernel log (tests/unit/judge/test_health_judgement.py)."""
    def health(data):
        gpu = data["gpus"][0]
        data["kernel_log"]["xid_events"] = [{"xid": 79, "pci_bus_id": gpu["pci"]["bus_id"], "pid": None, "process_name": None,
                                             "hardware": True, "time": None, "gpu_index": gpu["index"],
                                             "message": "GPU has fallen off the bus."}]
        data["kernel_log"].update(hardware_xid_count=1, xid_counts={"79": 1})   # the summaries of that list
    bench.edit("health", health)


def user_baseline_ambiguous(bench: Bench) -> None:
    """A user's baselines folder with a second file whose match also matches the H200, and the HBM at half speed
    (issue 44's table, row 1)."""
    folder = _copy_baselines(bench)
    with open(os.path.join(SHIPPED_BASELINES, "h200-sxm.yaml"), encoding="utf-8") as handle:
        document = yaml.safe_load(handle)
    document["id"] = "h200-sxm-ours"
    document["name"] = "Our H200s"
    with open(os.path.join(folder, "h200-sxm-ours.yaml"), "w", encoding="utf-8") as handle:
        yaml.safe_dump(document, handle, sort_keys=False)
    half_speed_hbm(bench)


def user_baseline_unloadable(bench: Bench) -> None:
    """A user's baselines folder whose h200-sxm.yaml fails to load (cut in half), and the HBM at half speed
    (issue 44's table, row 1)."""
    folder = _copy_baselines(bench)
    path = os.path.join(folder, "h200-sxm.yaml")
    with open(path, "rb") as handle:
        text = handle.read()
    with open(path, "wb") as handle:
        handle.write(text[:len(text) // 2])
    half_speed_hbm(bench)


def user_baseline_weaker(bench: Bench) -> None:
    """A user's baselines folder whose h200-sxm.yaml shadows the shipped one with every known-good value halved, and
    the HBM at half speed (issue 44's table, row 2)."""
    folder = _copy_baselines(bench)
    path = os.path.join(folder, "h200-sxm.yaml")
    with open(path, encoding="utf-8") as handle:
        document = yaml.safe_load(handle)
    for entry in document["known_good"].values():
        entry["value"] = round(entry["value"] * 0.5, 1)
        entry.pop("measured", None)
        entry["source"] = "our own numbers"
    with open(path, "w", encoding="utf-8") as handle:
        yaml.safe_dump(document, handle, sort_keys=False)
    half_speed_hbm(bench)


def truncated_health(bench: Bench) -> None:
    """health.json cut in half (issue 44's table, row 3)."""
    path = bench.result_path("health")
    with open(path, "rb") as handle:
        text = handle.read()
    with open(path, "wb") as handle:
        handle.write(text[:len(text) // 2])


def sparse_gemm(bench: Bench) -> None:
    """gemm.json a 2 GiB sparse file: its JSON, then holes to 2 GiB (issue 44's table, row 3)."""
    with open(bench.result_path("gemm"), "r+b") as handle:
        handle.truncate(SPARSE_BYTES)


def fifo_membw(bench: Bench) -> None:
    """membw.json replaced by a FIFO nothing writes to (issue 44's table, row 4: the report hung for ever)."""
    path = bench.result_path("membw")
    os.unlink(path)
    os.mkfifo(path)


def membw_links_to_another_host(bench: Bench) -> None:
    """membw.json a link to another host's membw.json, outside this host's directory (issue 44's table, row 3)."""
    other = os.path.join(bench.scratch, "other-host")
    os.makedirs(other, exist_ok=True)
    path = bench.result_path("membw")
    shutil.move(path, os.path.join(other, "membw.json"))
    os.symlink(os.path.join(other, "membw.json"), path)


def membw_links_to_dev_zero(bench: Bench) -> None:
    """membw.json a link to /dev/zero, a character device read without end (issue 44's table, row 3)."""
    path = bench.result_path("membw")
    os.unlink(path)
    os.symlink("/dev/zero", path)


def rules_empty(bench: Bench) -> None:
    """gpufleet_rules_file naming a file with rules: [] (issue 44's table, row 6)."""
    path = os.path.join(bench.scratch, "rules-empty.yaml")
    with open(path, "w", encoding="utf-8") as handle:
        handle.write("rules: []\n")
    bench.rules_path = path
    half_speed_hbm(bench)


def every_rule_disabled(bench: Bench) -> None:
    """A group variable disabling every rule of docs/rules.yaml (issue 44's table, row 6)."""
    with open(os.path.join(ROOT, "docs", "rules.yaml"), encoding="utf-8") as handle:
        rules = yaml.safe_load(handle)["rules"]
    bench.overrides = {rule["id"]: {"enabled": False} for rule in rules}
    half_speed_hbm(bench)


def promised_rule_disabled(bench: Bench) -> None:
    """membw.bandwidth, a headline acceptance promises, disabled by an override; the HBM at half speed (row 7)."""
    bench.overrides = dict(bench.overrides, **{"membw.bandwidth": {"enabled": False}})
    half_speed_hbm(bench)


def fail_rule_downgraded(bench: Bench) -> None:
    """membw.bandwidth downgraded to warn by an override; the HBM at half speed (issue 44's table, row 7)."""
    bench.overrides = dict(bench.overrides, **{"membw.bandwidth": {"severity": "warn"}})
    half_speed_hbm(bench)


def nvml_eight_on_a_bus_of_one(bench: Bench) -> None:
    """NVML lists 8 GPUs (8 /dev/nvidiaN nodes, CUDA 8) while the host's PCI bus section holds 1 (issue 44's table,
    row 8; tests/unit/judge/test_impossible_data.py's red team, on the recorded H200)."""
    def health(data):
        first = data["gpus"][0]
        for number, address in enumerate(EXTRA_ADDRESSES, start=1):
            gpu = copy.deepcopy(first)
            gpu.update(index=number, minor_number=number, uuid="%s%02d" % (first["uuid"][:-2], number),
                       serial="%s%d" % (first["serial"][:-1], number))
            gpu["pci"]["bus_id"] = address
            data["gpus"].append(gpu)
        data["topology"]["gpu_count"] = len(data["gpus"])
        init = data["cuda_init"]
        init["devices"] = [dict(init["devices"][0], index=gpu["index"], uuid=gpu["uuid"]) for gpu in data["gpus"]]
        init["device_count"] = len(data["gpus"])
        nodes = data["device_nodes"]
        node = next(entry for entry in nodes["nodes"] if entry["path"] == "/dev/nvidia0")
        nodes["nodes"].extend(dict(node, path="/dev/nvidia%d" % gpu["index"], minor=gpu["index"]) for gpu in data["gpus"][1:])
        nodes.update(gpu_node_count=len(data["gpus"]), gpu_node_minors=[gpu["index"] for gpu in data["gpus"]],
                     nvml_gpu_count=len(data["gpus"]))
    bench.edit("health", health)


def busy_gpu(bench: Bench) -> None:
    """The rig's leftover job (issue 44): python3 (pid 2172) holding 62.8 GiB in health's process list and, where this
    collection's schemas have the record, in each measuring probe's own; the bf16 burst at 37.9 % of the known-good
    with the power cap engaged in every window."""
    record_known = "foreign_gpu_processes" in _schema_text("common.schema.json")

    def health(data):
        data["gpus"][0]["processes"]["compute"] = [dict(LEFTOVER_JOB)]
    bench.edit("health", health)
    uuid = bench.read("health")["data"]["gpus"][0]["uuid"]
    with open(os.path.join(SHIPPED_BASELINES, "h200-sxm.yaml"), encoding="utf-8") as handle:
        known_good = yaml.safe_load(handle)["known_good"]["bf16_matmul"]["value"]

    def gemm(data):
        burst = data["devices"][0]["dtypes"]["bf16"]["power_states"]["burst"]
        slow = round(BUSY_BURST_SHARE * known_good, 2)
        burst.update(tflops=slow, repeats_tflops=[slow, round(slow * 0.99, 2), round(slow * 1.01, 2)], power_cap_reached=True,
                     note=CAPPED)
    bench.edit("gemm", gemm)
    if record_known:
        for probe in ("membw", "gemm"):
            bench.edit(probe, lambda data: data.update(foreign_gpu_processes=_foreign_record(uuid)))


def _foreign_record(uuid: str) -> Dict[str, Any]:
    return {"method": "NVML compute processes before and during the measurement", "interval_s": 1.0, "listings": 40,
            "own_pids": [3001], "gpus": [{"nvml_index": 0, "uuid": uuid, "before": [dict(LEFTOVER_JOB)],
                                          "during": [dict(LEFTOVER_JOB)], "unattributed": []}]}


def _schema_text(name: str) -> str:
    with open(os.path.join(SCHEMAS, name), encoding="utf-8") as handle:
        return handle.read()


INJECTIONS: Dict[str, Callable[[Bench], None]] = {
    function.__name__: function for function in (
        none, half_speed_hbm, gpu_20pct_slow, lowered_power_limit, noisy_burst, links_down, cpu_only, ecc_uncorrectable,
        remapped_row_pending, pcie_x8, xid_79,
        user_baseline_ambiguous, user_baseline_unloadable, user_baseline_weaker, truncated_health, sparse_gemm, fifo_membw,
        membw_links_to_another_host, membw_links_to_dev_zero, rules_empty, every_rule_disabled, promised_rule_disabled,
        fail_rule_downgraded, nvml_eight_on_a_bus_of_one, busy_gpu,
    )
}
# The injections whose point is a result file the report cannot read: the others keep every result valid.
UNREADABLE = ("truncated_health", "sparse_gemm", "fifo_membw", "membw_links_to_another_host", "membw_links_to_dev_zero")
