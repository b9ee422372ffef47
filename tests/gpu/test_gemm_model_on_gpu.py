"""gemm with model_config on a real NVIDIA GPU: Llama-3-8B's projections measured and explained (python3 -m pytest -m gpu
tests/gpu/test_gemm_model_on_gpu.py)."""
import hashlib
import json
import os
import re
import subprocess
import sys

import pytest

from ansible_collections.gpufleet.validation.plugins.plugin_utils.store.schemas import envelope_problems

pytestmark = pytest.mark.gpu

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
LLAMA_8B = os.path.join(ROOT, "tests", "data", "model_configs", "llama-3-8b.json")
PROJECTIONS = ("attn-q", "attn-k", "attn-v", "attn-o", "mlp-gate", "mlp-up", "mlp-down", "lm-head")


def run_gemm(tmp_path, params):
    params_file, out = tmp_path / "params.json", tmp_path / "gemm.json"
    params_file.write_text(json.dumps(params))
    subprocess.run([sys.executable, os.path.join(ROOT, "probes", "gemm.py"), "--params", str(params_file), "--out", str(out)],
                   check=True, timeout=900)
    return json.loads(out.read_text())


def test_llama_3_8b_shapes_measured_and_explained(tmp_path):
    torch = pytest.importorskip("torch")
    if not torch.cuda.is_available():
        pytest.skip("no CUDA GPU visible")
    envelope = run_gemm(tmp_path, {"quick": True, "device": "cuda", "model_config": LLAMA_8B})
    assert envelope["status"] == "ok", envelope["reason"]
    pytest.importorskip("jsonschema")
    assert envelope_problems(envelope) == []
    plan = envelope["data"]["plan"]
    with open(LLAMA_8B, "rb") as handle:
        assert plan["model"]["sha256"] == hashlib.sha256(handle.read()).hexdigest()
    assert plan["model"]["file"] == "llama-3-8b.json" and plan["model"]["fields"]["num_key_value_heads"] == 8
    expected = {"model-prefill-%s" % p for p in PROJECTIONS} | {"model-decode-%s" % p for p in PROJECTIONS}
    for entry in envelope["data"]["devices"]:
        assert entry["device"]["kind"] == "cuda"
        results = [result for result in entry["results"] if result["group"] in ("model_prefill", "model_decode")]
        # a name ends in -m<M>-n<N>-k<K>; "-mlp" holds "-m" too, so the dimensions are cut by pattern
        assert {re.sub(r"-m\d+-n\d+-k\d+$", "", result["name"]) for result in results} == expected
        assert len(results) == 8 * 4  # one prefill count (4096) and three decode batches (1, 8, 32), bf16
        by_name = {result["name"]: result for result in results}
        assert by_name["model-decode-attn-k-m1-n1024-k4096"]["classified_before_timing"]["classification"] == "memory-bound"
        assert by_name["model-prefill-mlp-up-m4096-n14336-k4096"]["classified_before_timing"]["classification"] == \
            "compute-bound"
        for result in results:
            assert result["dtype"] == "bf16" and result["measurement"]["tflops"] > 0
            explained = result["explained_after_timing"]
            # no upper bound: a decode shape's weights can stay in L2 between back-to-back calls and beat the HBM roof
            assert explained["explanation"] and explained["fraction_of_bound_pct"] > 0, (result["name"], explained)
