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
    envelope = run_probe(tmp_path, "membw", {})
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
    envelope = run_probe(tmp_path, "hostbw", {"quick": True})
    assert envelope["status"] == "ok", envelope["reason"]
    for device in envelope["data"]["devices"]:
        pinned = [result for result in device["results"] if result["host_memory"] == "pinned"]
        assert {result["direction"] for result in pinned} >= {"h2d", "d2h"}
        assert all(result["median_gbps"] > 5 and result["data_check"]["ok"] for result in pinned)
