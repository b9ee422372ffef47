"""The packed probe: byte-for-byte reproducible, and packed once per run (cached_probe_archive)."""
import io
import os
import shutil
import zipfile

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
