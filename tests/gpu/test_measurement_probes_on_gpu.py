"""membw, gemm and hostbw on a real NVIDIA machine (run on the device: python3 -m pytest -m gpu tests/gpu)."""
import json
import os
import subprocess
import sys

import pytest

from ansible_collections.gpufleet.validation.plugins.plugin_utils.store.schemas import schema_validator

pytestmark = pytest.mark.gpu

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def run_probe(tmp_path, name, params):
    params_file, out = tmp_path / "params.json", tmp_path / ("%s.json" % name)
    params_file.write_text(json.dumps(params))
    subprocess.run([sys.executable, os.path.join(ROOT, "probes", name + ".py"), "--params", str(params_file), "--out", str(out)],
                   check=True, timeout=900)
    envelope = json.loads(out.read_text())
    pytest.importorskip("jsonschema")
    schema_validator(name + ".schema.json").validate(envelope["data"])
    return envelope


def test_membw_finds_a_plateau_on_every_gpu(tmp_path):
    torch = pytest.importorskip("torch")
    envelope = run_probe(tmp_path, "membw", {"alone_devices": "all"})
    assert envelope["status"] == "ok", envelope["reason"]
    devices = envelope["data"]["devices"]
    assert len(devices) == torch.cuda.device_count() > 0
    for entry in devices:
        assert entry["device"]["kind"] == "cuda"
        assert entry["plateau"]["found"], entry["plateau"]["reason"]
        assert entry["headline"]["source"] == "plateau" and entry["headline"]["bandwidth_gbps"] > 500
        assert all(point["copy_verified"] for point in entry["sweep"] if point["status"] == "measured")


def test_gemm_bf16_runs_on_every_gpu(tmp_path):
    envelope = run_probe(tmp_path, "gemm", {"quick": True})
    assert envelope["status"] == "ok", envelope["reason"]
    for entry in envelope["data"]["devices"]:
        assert entry["device"]["kind"] == "cuda"
        assert entry["dtypes"]["bf16"]["best"]["tflops"] > 50
        states = entry["dtypes"]["bf16"]["power_states"]
        burst, sustained = states["burst"], states["sustained"]
        assert burst["repeats"] == sustained["repeats"] == 3
        # NVML was read inside every timed window, and a burst from idle is never slower than the steady state
        assert all(window["state"]["samples"] >= 1 for window in burst["windows"] + sustained["windows"])
        assert burst["tflops"] >= 0.98 * sustained["tflops"], (burst["repeats_tflops"], sustained["repeats_tflops"])
        assert isinstance(sustained["power_limit_w"], float)


def test_hostbw_pinned_copies_on_every_gpu(tmp_path):
    envelope = run_probe(tmp_path, "hostbw", {"quick": True, "alone_devices": "all"})
    assert envelope["status"] == "ok", envelope["reason"]
    for device in envelope["data"]["devices"]:
        pinned = [result for result in device["results"] if result["host_memory"] == "pinned"]
        assert {result["direction"] for result in pinned} >= {"h2d", "d2h"}
        assert all(result["median_gbps"] > 5 and result["data_check"]["ok"] for result in pinned)


def test_membw_two_workers_per_gpu_copy_together_each_near_half_of_alone(tmp_path):
    """Issue 35's concurrency path on the rig: two workers on each GPU, released together; each is owed half of the
    alone copy at its size (the rule's provisional thresholds are set from what this prints)."""
    torch = pytest.importorskip("torch")
    envelope = run_probe(tmp_path, "membw", {"workers_per_gpu": 2})
    assert envelope["status"] == "ok", envelope["reason"]
    together = envelope["data"]["together"]
    assert len(together["workers"]) == 2 * torch.cuda.device_count() and together["released_together"] is True
    reference = together["alone_reference"]
    for worker in together["workers"]:
        result = worker["result"]
        alone = next(found for found in [reference] + reference.get("other_sizes", []) if found["buffer_mib"] == result["buffer_mib"])
        share = 100.0 * result["bandwidth_gbps"] / (alone["bandwidth_gbps"] / 2)
        print("membw GPU %d worker %d: %.1f GB/s at %d MiB, %.1f %% of half the alone %.1f GB/s" % (
            worker["device_index"], worker["worker"], result["bandwidth_gbps"], result["buffer_mib"], share, alone["bandwidth_gbps"]))
        assert result["copy_verified"] is True and 50.0 < share < 150.0


def test_hostbw_two_workers_per_gpu_share_its_link(tmp_path):
    torch = pytest.importorskip("torch")
    envelope = run_probe(tmp_path, "hostbw", {"quick": True, "workers_per_gpu": 2})
    assert envelope["status"] == "ok", envelope["reason"]
    together = envelope["data"]["together"]
    assert len(together["workers"]) == 2 * torch.cuda.device_count() and together["released_together"] is True
    reference = together["alone_reference"]
    for worker in together["workers"]:
        result = worker["result"]
        assert result["uplink_sharers"] >= 2 and result["h2d"]["data_check"]["ok"] and result["d2h"]["data_check"]["ok"]
        for direction in ("h2d", "d2h"):
            key = "%s_pinned_gbps" % direction
            share = 100.0 * result[key] * result["uplink_sharers"] / reference[key]
            print("hostbw GPU %d worker %d %s: %.2f GB/s, %d sharers, %.1f %% of the alone %.2f GB/s / sharers" % (
                worker["device_index"], worker["worker"], direction, result[key], result["uplink_sharers"], share, reference[key]))
            assert 40.0 < share < 160.0
