"""precision on a real machine with an NVIDIA GPU (run on the device: python3 -m pytest -m gpu tests/gpu).

The GPU's numbers must match the CPU's on the same file: the casts and roundings are IEEE-defined on both, only the
order of the float64 sums differs. The real checkpoint is the slice of all-MiniLM-L6-v2 the collection ships (the probe's
default), or the file GPUFLEET_PRECISION_CHECKPOINT names (e.g. a slice made with tools/slice_safetensors.py --default,
under the 64 MiB a device call carries).
"""
import json
import math
import os
import subprocess
import sys

import pytest

from ansible_collections.gpufleet.validation.plugins.plugin_utils.store.schemas import schema_validator

pytestmark = pytest.mark.gpu

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def run_precision(tmp_path, params, label):
    params_file, out = tmp_path / ("%s_params.json" % label), tmp_path / ("%s.json" % label)
    params_file.write_text(json.dumps(params))
    subprocess.run([sys.executable, os.path.join(ROOT, "probes", "precision.py"), "--params", str(params_file), "--out", str(out)],
                   check=True, timeout=600)
    envelope = json.loads(out.read_text())
    pytest.importorskip("jsonschema")
    for name, document in (("envelope", envelope), ("precision", envelope["data"])):
        schema_validator(name + ".schema.json").validate(document)
    return envelope


def need_gpu():
    torch = pytest.importorskip("torch")
    if not torch.cuda.is_available():
        pytest.skip("torch sees no CUDA GPU")
    return torch


def assert_same_numbers(gpu, cpu):
    assert [tensor["name"] for tensor in gpu["data"]["tensors"]] == [tensor["name"] for tensor in cpu["data"]["tensors"]]
    for on_gpu, on_cpu in zip(gpu["data"]["tensors"], cpu["data"]["tensors"]):
        for key in ("min", "max", "absmax", "element_count", "outlier_count"):
            assert on_gpu["stats"][key] == on_cpu["stats"][key], (on_gpu["name"], key)
        for key in ("std", "kurtosis_pearson"):
            assert math.isclose(on_gpu["stats"][key], on_cpu["stats"][key], rel_tol=1e-5), (on_gpu["name"], key)
        assert on_gpu["fp16_range"] == on_cpu["fp16_range"] and on_gpu["ranking_by_sqnr"] == on_cpu["ranking_by_sqnr"]
        for entry_gpu, entry_cpu in zip(on_gpu["formats"], on_cpu["formats"]):
            where = (on_gpu["name"], entry_gpu["format"])
            assert entry_gpu["outcome"] == entry_cpu["outcome"], where
            assert entry_gpu["flushed_to_zero_count"] == entry_cpu["flushed_to_zero_count"], where
            assert entry_gpu["overflow_count"] == entry_cpu["overflow_count"], where
            if entry_gpu["sqnr_db"] is not None:
                assert abs(entry_gpu["sqnr_db"] - entry_cpu["sqnr_db"]) < 1e-3, where


def test_synthetic_tensors_match_the_cpu(tmp_path):
    torch = need_gpu()
    sys.path.insert(0, os.path.join(ROOT, "probes"))
    from probe_packages.precision.safetensors_file import write_file  # pylint: disable=import-outside-toplevel
    generator = torch.Generator().manual_seed(11)
    weights = torch.randn(4096, 1024, generator=generator) * 0.02
    weights[17] *= 40.0  # one row with a large range: per-tensor int8 suffers
    overflow = torch.randn(256, 64, generator=generator)
    overflow[0, 0] = 1.0e5  # beyond fp16's 65504
    path = tmp_path / "synthetic.safetensors"
    write_file(str(path), [("layers.0.mlp.up_proj.weight", "F32", [4096, 1024], weights.numpy().tobytes()),
                           ("layers.0.self_attn.q_proj.weight", "BF16", [4096, 1024], weights.bfloat16().view(torch.uint8).numpy().tobytes()),
                           ("model.embed_tokens.weight", "F32", [256, 64], overflow.numpy().tobytes())], {})
    gpu = run_precision(tmp_path, {"checkpoint": str(path), "device": "cuda"}, "gpu")
    cpu = run_precision(tmp_path, {"checkpoint": str(path), "device": "cpu"}, "cpu")
    assert gpu["status"] == "ok" and cpu["status"] == "ok", (gpu["reason"], cpu["reason"])
    assert gpu["data"]["device"]["kind"] == "cuda" and gpu["data"]["device"]["name"] == torch.cuda.get_device_name(0)
    assert_same_numbers(gpu, cpu)
    tensors = {tensor["role"]: tensor for tensor in gpu["data"]["tensors"]}
    embedding = {entry["format"]: entry for entry in tensors["embedding"]["formats"]}
    assert embedding["fp16"]["outcome"] == "infinite" and embedding["fp16"]["overflow_count"] == 1
    assert tensors["embedding"]["explanation"].startswith("Reversal:") and "fp16 overflows 1 element(s) to inf" in tensors["embedding"]["explanation"]
    assert {entry["format"]: entry for entry in tensors["attention"]["formats"]}["bf16"]["exact"]
    assert "Outlier effect: int8 per-tensor" in tensors["mlp"]["explanation"]


def test_the_real_checkpoint_on_the_gpu(tmp_path):
    need_gpu()
    checkpoint = os.environ.get("GPUFLEET_PRECISION_CHECKPOINT", "")  # "": the shipped slice, no package needed
    gpu = run_precision(tmp_path, {"checkpoint": checkpoint}, "gpu")
    cpu = run_precision(tmp_path, {"checkpoint": checkpoint, "device": "cpu"}, "cpu")
    assert gpu["status"] == "ok", gpu["reason"]
    assert gpu["data"]["device"]["kind"] == "cuda" and gpu["data"]["plan"]["device_requested"] == "auto"
    names = [tensor["name"] for tensor in gpu["data"]["tensors"]]
    assert names == [tensor["name"] for tensor in cpu["data"]["tensors"]]
    described = gpu["data"]["checkpoint"]
    assert described["source"] == ("param" if checkpoint else "shipped")
    if not checkpoint:
        assert described["sha256"] == described["shipped"]["sha256"] and described["tensor_count"] == 3
    # the whole checkpoint's and the shipped slice's largest embedding is the word embedding; a slice made with
    # tools/slice_safetensors.py --default may hold only the position embedding, which the same rule then picks
    embedding = "embeddings.word_embeddings.weight" if not checkpoint or described["tensor_count"] > 100 else \
        "embeddings.position_embeddings.weight"
    assert names == [embedding, "encoder.layer.0.attention.self.query.weight", "encoder.layer.0.intermediate.dense.weight"]
    assert_same_numbers(gpu, cpu)
    assert gpu["duration_s"] < 60
