"""results/latest: a link the report points at the newest run; a real directory of that name is the user's and is left
alone, said in a warning, and never read as a run (issue 32)."""
from __future__ import annotations

import os

import pytest

from ansible_collections.gpufleet.validation.plugins.plugin_utils.store.latest_link import LatestKeptNewer, LatestLeftAlone, point_latest_at
from ansible_collections.gpufleet.validation.plugins.plugin_utils.store.previous import earlier_runs

RUN_ID = "20261203T010000Z-000002"


def test_a_link_is_pointed_at_the_run(tmp_path):
    (tmp_path / RUN_ID).mkdir()
    os.symlink("elsewhere", str(tmp_path / "latest"))
    assert point_latest_at(str(tmp_path), RUN_ID) == str(tmp_path / "latest")
    assert os.readlink(str(tmp_path / "latest")) == RUN_ID


@pytest.mark.parametrize("kind", ["directory", "file"])
def test_a_real_latest_is_left_alone_with_its_data(tmp_path, kind):
    (tmp_path / RUN_ID).mkdir()
    latest = tmp_path / "latest"
    if kind == "directory":
        latest.mkdir()
        (latest / "notes.txt").write_text("the user's data\n")
    else:
        latest.write_text("the user's data\n")
    with pytest.raises(LatestLeftAlone, match="latest is a %s, not a link: it was left as it is" % kind) as raised:
        point_latest_at(str(tmp_path), RUN_ID)
    assert isinstance(raised.value, OSError) and RUN_ID in str(raised.value)
    kept = latest / "notes.txt" if kind == "directory" else latest
    assert kept.read_text() == "the user's data\n" and not os.path.islink(str(latest))
    assert sorted(os.listdir(str(tmp_path))) == [RUN_ID, "latest"]


def test_a_real_latest_directory_is_not_an_earlier_run(tmp_path):
    for name in ("20261201T010000Z-000001", RUN_ID, "latest"):
        (tmp_path / name / "gpu-a01").mkdir(parents=True)
    assert earlier_runs(str(tmp_path), RUN_ID) == ["20261201T010000Z-000001"]


def test_latest_never_moves_backwards(tmp_path):
    """Issue 45: a controller whose clock was a day behind named its run for yesterday, and latest moved to it; an older
    run re-judged with playbooks/report.yml moved it back too."""
    older, newer = "20261202T010000Z-000001", RUN_ID
    for run_id in (older, newer):
        (tmp_path / run_id).mkdir()
    point_latest_at(str(tmp_path), newer)
    with pytest.raises(LatestKeptNewer, match="latest still points at run %s: run %s sorts before it" % (newer, older)):
        point_latest_at(str(tmp_path), older)
    assert os.readlink(str(tmp_path / "latest")) == newer
    point_latest_at(str(tmp_path), newer)  # the same run again: nothing to refuse
    later = "20261204T010000Z-000003"
    (tmp_path / later).mkdir()
    point_latest_at(str(tmp_path), later)
    assert os.readlink(str(tmp_path / "latest")) == later
