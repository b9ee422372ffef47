"""The fusion probe on a real NVIDIA machine, quick mode (run on the device: python3 -m pytest -m gpu tests/gpu)."""
import json
import os
import subprocess
import sys

import pytest

from ansible_collections.gpufleet.validation.plugins.plugin_utils.store.schemas import envelope_problems

pytestmark = pytest.mark.gpu

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def test_fusion_quick_on_every_gpu(tmp_path):
    torch = pytest.importorskip("torch")
    params_file, out = tmp_path / "params.json", tmp_path / "fusion.json"
    params_file.write_text(json.dumps({"quick": True, "alone_devices": "all"}))
    subprocess.run([sys.executable, os.path.join(ROOT, "probes", "fusion.py"), "--params", str(params_file), "--out", str(out)],
                   check=True, timeout=600)
    envelope = json.loads(out.read_text())
    assert envelope_problems(envelope) == []
    assert envelope["status"] == "ok", envelope["reason"]
    data = envelope["data"]
    assert data["plan"]["dtype"] == "bfloat16" and data["plan"]["sizes_elements"] == [1 << 20, 1 << 26]
    assert len(data["devices"]) == torch.cuda.device_count() > 0
    for entry in data["devices"]:
        assert entry["device"]["kind"] == "cuda" and isinstance(entry["triton_version"], str)
        small, large = entry["points"]
        for point in (small, large):
            assert point["status"] == "measured", point["reason"]
            assert point["verification"]["outputs_agree"] is True
            assert point["fused"]["traffic_bytes"] == 5 * point["elements"] * 2
            assert point["unfused"]["traffic_bytes"] == 11 * point["elements"] * 2
            assert point["explanation"]
        # 2^26 bf16 elements: 128 MiB a tensor, well past the L2, where both versions stream from HBM
        assert large["unfused"]["achieved_gbps"] > 500 and large["fused"]["achieved_gbps"] > 500
        assert large["measured_speedup"] > 1.2, large["explanation"]
        # one generated Triton kernel, or a cache hit that inductor did not count
        generated = large["compile"]["generated_kernels"]
        assert generated == 1 or "cache" in generated["unavailable"]
