"""The packed probe: byte-for-byte reproducible, and packed once per run (cached_probe_archive)."""
import io
import json
import os
import shutil
import subprocess
import sys
import zipfile

import pytest

from ansible_collections.gpufleet.validation.plugins.plugin_utils import probe_archive

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))


def test_the_cache_gives_the_bytes_a_fresh_pack_gives_and_packs_once(tmp_path, monkeypatch):
    fresh, fresh_sha = probe_archive.build_probe_archive("health", ROOT)
    assert probe_archive.build_probe_archive("health", ROOT) == (fresh, fresh_sha)  # reproducible
    built = []
    real_build = probe_archive.build_probe_archive
    monkeypatch.setattr(probe_archive, "build_probe_archive", lambda *args: built.append(args) or real_build(*args))
    first = probe_archive.cached_probe_archive("health", str(tmp_path), ROOT)
    second = probe_archive.cached_probe_archive("health", str(tmp_path), ROOT)
    assert first == second == (fresh, fresh_sha)
    assert len(built) == 1
    assert [name for name in os.listdir(str(tmp_path)) if name.startswith("gpufleet-probe-health-")]


def test_a_changed_member_is_packed_again(tmp_path):
    root = tmp_path / "collection"
    shutil.copytree(os.path.join(ROOT, "probes"), str(root / "probes"))
    spec = root / "plugins" / "plugin_utils" / "probes" / "health"
    spec.mkdir(parents=True)
    shutil.copy(probe_archive.params_spec_path("health", ROOT), str(spec))
    cache = str(tmp_path / "cache")
    before, unused_sha = probe_archive.cached_probe_archive("health", cache, str(root))
    library = root / "probes" / "probelib" / "__init__.py"
    library.write_text(library.read_text() + "\n# changed\n")
    after, unused_sha = probe_archive.cached_probe_archive("health", cache, str(root))
    assert before != after
    assert b"# changed" in zipfile.ZipFile(io.BytesIO(after)).read("probelib/__init__.py")


def test_a_cache_entry_that_is_a_symlink_is_not_read(tmp_path):
    fresh, unused_sha = probe_archive.build_probe_archive("health", ROOT)
    probe_archive.cached_probe_archive("health", str(tmp_path), ROOT)
    entry = [name for name in os.listdir(str(tmp_path)) if name.endswith(".zip")][0]
    (tmp_path / "planted").write_bytes(b"not the probe")
    os.unlink(str(tmp_path / entry))
    os.symlink(str(tmp_path / "planted"), str(tmp_path / entry))
    payload, unused_sha = probe_archive.cached_probe_archive("health", str(tmp_path), ROOT)
    assert payload == fresh  # packed again, not read through the link
    assert (tmp_path / "planted").read_bytes() == b"not the probe" and not os.path.islink(str(tmp_path / entry))


def test_only_the_precision_probe_carries_its_shipped_data():
    shipped = ["probe_packages/precision/data/" + name for name in sorted(os.listdir(os.path.join(ROOT, "probes", "probe_packages", "precision", "data")))]
    assert "probe_packages/precision/data/minilm_l6_v2_slice.safetensors" in shipped and "probe_packages/precision/data/LICENSE" in shipped
    for name in probe_archive.available_probes(ROOT):
        payload, unused_sha = probe_archive.build_probe_archive(name, ROOT)
        members = zipfile.ZipFile(io.BytesIO(payload)).namelist()
        data = [member for member in members if "/data/" in member]
        if name == "precision":
            assert data == shipped
            assert len(payload) < 6 << 20  # base64 in the module's arguments: a few MB for this one probe
        else:
            assert data == [] and len(payload) < 1 << 20, name


def test_the_unpacked_precision_probe_reads_the_slice_it_carries(tmp_path):
    from ansible_collections.gpufleet.validation.plugins.modules.probe import extract_archive  # pylint: disable=import-outside-toplevel
    payload, unused_sha = probe_archive.build_probe_archive("precision", ROOT)
    archive, work = tmp_path / "probe.zip", tmp_path / "work"
    archive.write_bytes(payload)
    extract_archive(str(archive), str(work))  # as the module does on the host
    (tmp_path / "params.json").write_text(json.dumps({"device": "cpu"}))
    completed = subprocess.run([sys.executable, str(work / "precision.py"), "--params", str(tmp_path / "params.json"),
                                "--out", str(tmp_path / "out.json")], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                               cwd=str(work), timeout=120, check=False)
    assert completed.returncode == 0, completed.stderr.decode()
    envelope = json.loads((tmp_path / "out.json").read_text())
    assert envelope["status"] == "ok", envelope["reason"]
    checkpoint = envelope["data"]["checkpoint"]
    assert checkpoint["source"] == "shipped"
    assert checkpoint["path"] == str(work / "probe_packages" / "precision" / "data" / "minilm_l6_v2_slice.safetensors")
    assert len(envelope["data"]["tensors"]) == 3


def test_a_link_among_a_probes_data_files_is_refused(tmp_path):
    root = tmp_path / "collection"
    shutil.copytree(os.path.join(ROOT, "probes"), str(root / "probes"))
    data = root / "probes" / "probe_packages" / "precision" / "data"
    (tmp_path / "secret").write_text("not for the host")
    os.symlink(str(tmp_path / "secret"), str(data / "extra"))
    with pytest.raises(ValueError, match="is a link"):
        probe_archive.build_probe_archive("precision", str(root))


@pytest.mark.parametrize("name, params, shared", [
    ("membw", {"device": "cuda"}, "probelib/measure/opening.py"),
    ("fabric", {}, "probelib/system/sysfs_class.py"),
])
def test_a_probe_unpacked_from_its_archive_runs_on_the_shared_library_it_carries(tmp_path, name, params, shared):
    """The shared library's modules go with every probe (issue 47: the per-GPU opening, the sysfs class walk): membw
    asked for GPUs on this GPU-less machine ends unavailable through the opening, fabric lists /sys/class/net."""
    pytest.importorskip("torch")
    from ansible_collections.gpufleet.validation.plugins.modules.probe import extract_archive  # pylint: disable=import-outside-toplevel
    payload, unused_sha = probe_archive.build_probe_archive(name, ROOT)
    assert shared in zipfile.ZipFile(io.BytesIO(payload)).namelist()
    archive, work = tmp_path / "probe.zip", tmp_path / "work"
    archive.write_bytes(payload)
    extract_archive(str(archive), str(work))
    (tmp_path / "params.json").write_text(json.dumps(params))
    completed = subprocess.run([sys.executable, str(work / (name + ".py")), "--params", str(tmp_path / "params.json"),
                                "--out", str(tmp_path / "out.json")], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                               cwd=str(work), timeout=120, check=False)
    envelope = json.loads((tmp_path / "out.json").read_text())
    if name == "membw":
        assert envelope["status"] == "unavailable" and envelope["reason"].startswith("no CUDA GPU is visible to torch"), envelope
        assert envelope["data"]["devices"] == [] and envelope["data"]["plan"]["name"].startswith("gpu-default")
    else:
        assert envelope["status"] != "error", (envelope["reason"], completed.stderr.decode())
        assert isinstance(envelope["data"]["ethernet"], (list, dict))
