"""gemm's and fusion's together phase on a real NVIDIA machine with two workers per GPU (on the 1-GPU rig: two workers
on the one GPU, the concurrency path of issue 35). Run on the device: python3 -m pytest -m gpu tests/gpu."""
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
    schema_validator(name + ".schema.json").validate(envelope["data"])
    return envelope


def test_gemm_two_workers_per_gpu_share_each_gpu_and_read_its_slowdown_counters(tmp_path):
    torch = pytest.importorskip("torch")
    envelope = run_probe(tmp_path, "gemm", {"quick": True, "workers_per_gpu": 2})
    assert envelope["status"] == "ok", envelope["reason"]
    phase = envelope["data"]["together"]
    assert len(phase["workers"]) == 2 * torch.cuda.device_count() and phase["released_together"] is True
    alone = phase["alone_reference"]["sustained"]["bf16"]["tflops"]
    for entry in phase["workers"]:
        assert entry["status"] == "ok", entry.get("error")
        result = entry["result"]
        sustained = result["sustained"]["bf16"]
        assert all(window["state"]["samples"] >= 1 for window in sustained["windows"])
        # two workers share the GPU: each near half the alone rate; about the whole of it would mean the windows did
        # not overlap (the workers took turns)
        assert 0.6 < sustained["tflops"] / (alone / 2) < 1.2, (sustained["repeats_tflops"], alone)
        window = result["clock_event_durations_window"]
        assert window["window_s"] > 6 and "s" in window["reasons"]["sw_power_cap"]
        print("GPU %d worker %d: %s TFLOP/s together, alone %s; counters %s" % (
            entry["device_index"], entry["worker"], sustained["tflops"], alone,
            {name: value.get("s") for name, value in window["reasons"].items()}))


def test_fusion_two_workers_per_gpu_run_the_chain_together(tmp_path):
    torch = pytest.importorskip("torch")
    envelope = run_probe(tmp_path, "fusion", {"quick": True, "workers_per_gpu": 2})
    assert envelope["status"] == "ok", envelope["reason"]
    phase = envelope["data"]["together"]
    assert len(phase["workers"]) == 2 * torch.cuda.device_count()
    alone = phase["alone_reference"]
    for entry in phase["workers"]:
        assert entry["status"] == "ok", entry.get("error")
        result = entry["result"]
        assert result["elements"] == alone["elements"] == 1 << 26
        assert result["unfused_achieved_gbps"] > 0.6 * alone["unfused_achieved_gbps"] / 2, (result, alone)
        print("GPU %d worker %d: unfused %s GB/s, fused %s GB/s together; alone %s, %s" % (
            entry["device_index"], entry["worker"], result["unfused_achieved_gbps"], result["fused_achieved_gbps"],
            alone["unfused_achieved_gbps"], alone["fused_achieved_gbps"]))
