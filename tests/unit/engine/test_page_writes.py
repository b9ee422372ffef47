"""A host's pages are written without a sync, the fleet's files and outcomes with one (issue 47 point 7: five synced
files per host were most of a 1,000-host report's wall time), and every write is still atomic and below its root."""
import os

import pytest

from ansible_collections.gpufleet.validation.plugins.plugin_utils.store import safe_fs
from ansible_collections.gpufleet.validation.plugins.plugin_utils.store.atomic import text_writer_below
from ansible_collections.gpufleet.validation.plugins.plugin_utils.store.paths import HOST_REPORT_FILES, JUNIT_FILE


@pytest.fixture(name="synced")
def synced_files(monkeypatch):
    synced = []
    real = os.fsync

    def counting_fsync(fd):
        synced.append(os.readlink("/proc/self/fd/%d" % fd))
        return real(fd)
    monkeypatch.setattr(safe_fs.os, "fsync", counting_fsync)
    return synced


def test_a_hosts_pages_are_not_synced_and_the_fleets_files_and_outcomes_are(tmp_path, synced):
    write = text_writer_below(str(tmp_path))
    for name in HOST_REPORT_FILES:
        write(str(tmp_path / "run" / "hosts" / "n1" / name), "page %s" % name)
    write(str(tmp_path / "run" / JUNIT_FILE), "<testsuites/>")
    write(str(tmp_path / "run" / "outcomes" / "n1.json"), "{}")
    assert sorted((tmp_path / "run" / "hosts" / "n1").iterdir()) == sorted(tmp_path / "run" / "hosts" / "n1" / name for name in HOST_REPORT_FILES)
    assert all((tmp_path / "run" / "hosts" / "n1" / name).read_text() == "page %s" % name for name in HOST_REPORT_FILES)
    assert sorted(os.path.basename(path).split("-")[1] for path in synced) == sorted([JUNIT_FILE, "n1.json"])


def test_an_unsynced_page_is_still_never_written_through_a_link(tmp_path, synced):
    outside = tmp_path / "outside"
    outside.mkdir()
    (tmp_path / "run").mkdir()
    os.symlink(outside, tmp_path / "run" / "hosts")
    with pytest.raises(OSError):
        text_writer_below(str(tmp_path))(str(tmp_path / "run" / "hosts" / HOST_REPORT_FILES[0]), "x")
    assert not list(outside.iterdir()) and synced == []
