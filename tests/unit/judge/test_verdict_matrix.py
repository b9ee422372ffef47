"""The verdict matrix: real recorded results from the H200 rigs and edited copies of them, each against the exact
verdict, whether the acceptance gate takes the host, and the first reason it must give (issue 11).

Rows: the 1-GPU H200 acceptance run on the final code and the 2-GPU H200 acceptance run (healthy: pass); edited copies
of the 1-GPU run (a GPU 20 % slow, a lowered power limit, a burst whose repeats straddle the threshold, a CPU-only host,
nothing measured on a host that should have a GPU); the 2-GPU run with 0 of 18 NVLinks; and the rig's own fault runs
(CUDA hiding the GPU, a stale /dev/nvidia-uvm).
"""
import copy
import json
import os

import pytest

from ansible_collections.gpufleet.validation.plugins.plugin_utils.judge.model import blocks_gate

from helpers import ROOT, baselines, judge_fleet, rules

EXAMPLES = os.path.join(ROOT, "docs", "examples")
H200X1 = os.path.join(EXAMPLES, "h200x1", "final", "20261201T090639Z-551803", "localhost")
H200X1_HIDDEN = os.path.join(EXAMPLES, "h200x1", "final", "20261201T091043Z-857640", "localhost")
H200X1_STALE = os.path.join(EXAMPLES, "h200x1", "final", "20261201T091136Z-289143", "localhost")
H200X2 = os.path.join(EXAMPLES, "h200x2", "20261130T054132Z-520925", "localhost")
ONE_GPU = {"health.gpu_count": {"params": {"expected": 1}}}
TWO_GPUS = {"health.gpu_count": {"params": {"expected": 2}}}
NO_DRIVER = "no NVIDIA kernel module loaded: /proc/driver/nvidia is missing"


def run(directory):
    envelopes = {}
    for name in sorted(os.listdir(directory)):
        if name.endswith(".json"):
            with open(os.path.join(directory, name)) as handle:
                envelopes[name[:-5]] = json.load(handle)
    return envelopes


def scaled(envelopes, factor):
    """Every GPU rate of the run multiplied by factor: a GPU that is slow everywhere."""
    edited = copy.deepcopy(envelopes)
    for device in edited["gemm"]["data"]["devices"]:
        for rate in device["dtypes"].values():
            for method in ("burst", "sustained"):
                state = (rate.get("power_states") or {}).get(method) if isinstance(rate, dict) else None
                if isinstance(state, dict) and "tflops" in state:
                    state["tflops"] *= factor
                    state["repeats_tflops"] = [value * factor for value in state["repeats_tflops"]]
    for entry in edited["membw"]["data"]["devices"]:
        entry["headline"]["bandwidth_gbps"] *= factor
        entry["repeats"]["bandwidths_gbps"] = [value * factor for value in entry["repeats"]["bandwidths_gbps"]]
    for device in edited["hostbw"]["data"]["devices"]:
        for result in device["results"]:
            if "median_gbps" in result:
                result["median_gbps"] *= factor
                result["repeats_gbps"] = [value * factor for value in result.get("repeats_gbps", [])]
    return edited


def lowered_power_limit(envelopes):
    edited = scaled(envelopes, 0.8)
    for gpu in edited["health"]["data"]["gpus"]:
        gpu["power"]["enforced_limit_w"] = gpu["power"]["limit_w"] = 500.0
    for device in edited["gemm"]["data"]["devices"]:
        for rate in device["dtypes"].values():
            state = (rate.get("power_states") or {}).get("sustained") if isinstance(rate, dict) else None
            if isinstance(state, dict):
                state["power_limit_w"] = 500.0
    return edited


def noisy_burst(envelopes):
    edited = copy.deepcopy(envelopes)
    burst = edited["gemm"]["data"]["devices"][0]["dtypes"]["bf16"]["power_states"]["burst"]
    burst["repeats_tflops"] = [640.0, 700.0, 760.0]   # 85 % of 795 = 675.75 lies between them
    burst["tflops"] = 700.0
    return edited


def links_down(envelopes):
    edited = copy.deepcopy(envelopes)
    for gpu in edited["health"]["data"]["gpus"]:
        for link in gpu["nvlink"]["links"]:
            link["state"] = "inactive"
        gpu["nvlink"]["active_count"] = 0
    return edited


def cpu_only(envelopes):
    """A host without an NVIDIA driver: health unavailable with the probe's first reason, membw on the CPU."""
    health = copy.deepcopy(envelopes["health"])
    health.update(status="unavailable", reason=NO_DRIVER + "; nvidia-ml-py is not installed for /usr/bin/python3")
    health["data"] = {key: {"unavailable": NO_DRIVER} for key in ("gpus", "topology")}
    health["data"]["device_nodes"] = {"gpu_node_count": 0, "nodes": [], "mismatches": [], "missing_nodes": []}
    membw = copy.deepcopy(envelopes["membw"])
    for entry in membw["data"]["devices"]:
        entry["device"] = dict(entry["device"], kind="cpu", uuid={"unavailable": "a CPU has no UUID"})
    return {"health": health, "membw": membw}


def judged(envelopes, overrides):
    hosts = {"host": {"envelopes": envelopes, "reached": True, "reason": "", "groups": [], "rule_overrides": overrides}}
    return judge_fleet("matrix", hosts, baselines(), rules()).hosts["host"]


ROWS = [
    # (row, envelopes, overrides, verdict, gate takes the host, the first reason starts with, and contains)
    ("1-GPU H200, final code", lambda: run(H200X1), ONE_GPU, "pass", True, None, None),
    ("2-GPU H200, acceptance", lambda: run(H200X2), TWO_GPUS, "pass", True, None, None),
    ("a GPU 20 % slow", lambda: scaled(run(H200X1), 0.8), ONE_GPU, "fail", False, "hostbw.pinned_h2d", "below 85 % fails"),
    ("a lowered power limit", lambda: lowered_power_limit(run(H200X1)), ONE_GPU, "fail", False, "health.power_limit",
     "a configuration finding"),
    ("a burst inside the noise", lambda: noisy_burst(run(H200X1)), ONE_GPU, "warn", True, "gemm.bf16_burst", "unstable"),
    ("0 of 18 NVLinks on two GPUs", lambda: links_down(run(H200X2)), TWO_GPUS, "fail", False, "health.nvlink_active",
     "0 of 18 NVLinks active"),
    ("CUDA hides the GPU (the rig)", lambda: run(H200X1_HIDDEN), ONE_GPU, "fail", False, "health.cuda_init",
     "NVML lists 1 GPU(s) but CUDA sees none"),
    ("a stale /dev/nvidia-uvm (the rig)", lambda: run(H200X1_STALE), ONE_GPU, "fail", False, "health.device_majors",
     "re-created by the driver while the probe ran as root"),
    ("a CPU-only host", lambda: cpu_only(run(H200X1)), {}, "warn", False, "host.gpu_measured", NO_DRIVER),
    ("nothing measured where a GPU should be", lambda: cpu_only(run(H200X1)), ONE_GPU, "fail", False,
     "health.probe_status", NO_DRIVER),
]


@pytest.mark.parametrize("row, envelopes, overrides, verdict, accepted, first, words", ROWS, ids=[row[0] for row in ROWS])
def test_verdict_matrix(row, envelopes, overrides, verdict, accepted, first, words):
    result = judged(envelopes(), overrides)
    assert result.verdict == verdict, (row, result.reasons[:3])
    assert blocks_gate(result) is not accepted, (row, result.reasons[:3])
    if first is None:
        assert result.reasons == [], (row, result.reasons)
        return
    assert result.reasons[0].startswith(first + ":"), (row, result.reasons[:3])
    assert words in result.reasons[0], (row, result.reasons[0])


def test_the_healthy_runs_repeat_their_checks():
    """Judged twice, the same recorded run gives the same checks (no randomness, no order dependence)."""
    first = [(check.id, check.gpu_index, check.status) for check in judged(run(H200X1), ONE_GPU).checks]
    second = [(check.id, check.gpu_index, check.status) for check in judged(run(H200X1), ONE_GPU).checks]
    assert first == second


def test_the_lowered_limit_is_not_called_slow():
    result = judged(lowered_power_limit(run(H200X1)), ONE_GPU)
    sustained = [check for check in result.checks if check.id == "gemm.bf16_sustained"]
    assert sustained and sustained[0].status == "skip" and "not compared" in sustained[0].reason


def test_a_gpu_20_pct_slow_fails_every_rate_rule_not_one_of_them():
    """Each rate rule holds its own reference measured the way the probe measures: 20 % slow is outside each one."""
    result = judged(scaled(run(H200X1), 0.8), ONE_GPU)
    statuses = {check.id: check.status for check in result.checks if check.id in RATE_RULES}
    assert statuses == {rule: "fail" for rule in RATE_RULES}, statuses


RATE_RULES = ("membw.bandwidth", "hostbw.pinned_h2d", "hostbw.pinned_d2h", "gemm.bf16_burst", "gemm.bf16_sustained",
              "gemm.fp8_burst", "gemm.fp8_sustained")
