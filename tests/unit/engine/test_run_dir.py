"""The run's store on real files: no write through a link, a run id names one run, one live writer per host."""
import hashlib
import json
import os
import re

import pytest

from ansible_collections.gpufleet.validation.plugins.module_utils.process_tree import start_ticks
from ansible_collections.gpufleet.validation.plugins.plugin_utils.store import run_dir
from ansible_collections.gpufleet.validation.plugins.plugin_utils.store.atomic import write_text_atomically
from ansible_collections.gpufleet.validation.plugins.plugin_utils.store.paths import (
    HOST_DIR_NAME_MAX,
    check_run_id,
    host_dir_name,
)
from ansible_collections.gpufleet.validation.plugins.plugin_utils.store.results import RAW_LIMIT_BYTES, bounded_raw
from ansible_collections.gpufleet.validation.plugins.plugin_utils.store.safe_fs import LinkRefused, write_bytes_below


def digest(path):
    with open(path, "rb") as handle:
        return hashlib.sha256(handle.read()).hexdigest()


def writer(resume=False, writer_id="w-mine", pid=None):
    record = run_dir.playbook_writer(resume, "health")
    record["writer_id"] = writer_id
    if pid is not None:
        record.update(pid=pid, pid_start_ticks=start_ticks(pid))
    return record


def dead_pid():
    pid = os.fork()
    if pid == 0:
        os._exit(0)
    os.waitpid(pid, 0)
    return pid


# ---------------------------------------------------------------- links

def test_a_link_below_the_root_is_refused_and_its_target_is_untouched(tmp_path):
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "health.json").write_text("precious")
    before = digest(outside / "health.json")
    root = tmp_path / "results"
    (root / "run1").mkdir(parents=True)
    os.symlink(str(outside), str(root / "run1" / "gpu-a01"))
    with pytest.raises(LinkRefused, match="gpu-a01 is a symbolic link .to .*outside."):
        write_bytes_below(str(root), str(root / "run1" / "gpu-a01" / "health.json"), b"{}")
    assert digest(outside / "health.json") == before and os.listdir(outside) == ["health.json"]


def test_a_link_at_the_file_itself_is_replaced_not_followed(tmp_path):
    outside = tmp_path / "secret"
    outside.write_text("precious")
    root = tmp_path / "results"
    (root / "run1").mkdir(parents=True)
    os.symlink(str(outside), str(root / "run1" / "index.html"))
    write_text_atomically(str(root / "run1" / "index.html"), "<p>new</p>", root=str(root))
    assert outside.read_text() == "precious"
    assert not os.path.islink(root / "run1" / "index.html") and (root / "run1" / "index.html").read_text() == "<p>new</p>"


def test_a_link_at_the_run_directory_is_refused_by_open_run(tmp_path):
    target = tmp_path / "elsewhere"
    target.mkdir()
    (target / "index.html").write_text("theirs")
    root = tmp_path / "results"
    root.mkdir()
    os.symlink(str(target), str(root / "run1"))
    with pytest.raises(run_dir.StoreRefused, match="run1 is a symbolic link"):
        run_dir.open_run(str(root), "run1", writer())
    assert os.listdir(target) == ["index.html"] and (target / "index.html").read_text() == "theirs"


# ---------------------------------------------------------------- run ids

def test_latest_is_not_a_run_id():
    with pytest.raises(ValueError, match="the link to the newest run"):
        check_run_id("latest")


def test_a_fresh_run_records_its_writer_and_the_same_writer_may_come_back(tmp_path):
    mine = writer()
    record = run_dir.open_run(str(tmp_path), "run1", mine)
    assert [entry["writer_id"] for entry in record["writers"]] == ["w-mine"]
    assert run_dir.open_run(str(tmp_path), "run1", mine)["writers"] == record["writers"]  # a second task, same run
    with open(tmp_path / "run1" / "run.json") as handle:
        assert json.load(handle)["writers"][0]["profile"] == "health"


def test_a_run_id_used_again_is_refused_unless_the_writer_resumes(tmp_path):
    run_dir.open_run(str(tmp_path), "run1", writer())
    before = digest(tmp_path / "run1" / "run.json")
    with pytest.raises(run_dir.StoreRefused, match="run id run1 already names a run .* gpufleet_resume=true"):
        run_dir.open_run(str(tmp_path), "run1", writer(writer_id="w-other"))
    assert digest(tmp_path / "run1" / "run.json") == before
    record = run_dir.open_run(str(tmp_path), "run1", writer(resume=True, writer_id="w-slice"))
    assert [entry["writer_id"] for entry in record["writers"]] == ["w-mine", "w-slice"]


def test_a_broken_run_record_is_refused_not_rewritten(tmp_path):
    (tmp_path / "run1").mkdir()
    (tmp_path / "run1" / "run.json").write_text("{truncated")
    with pytest.raises(run_dir.StoreRefused, match="run.json is not readable JSON"):
        run_dir.open_run(str(tmp_path), "run1", writer(resume=True))
    assert (tmp_path / "run1" / "run.json").read_text() == "{truncated"


# ---------------------------------------------------------------- one writer per host

def test_a_host_held_by_another_live_writer_is_refused_naming_it(tmp_path):
    live = writer(resume=True, writer_id="w-live", pid=os.getpid())
    run_dir.open_run(str(tmp_path), "run1", live)
    with run_dir.claimed_host_dir(str(tmp_path), "run1", "gpu-a01", live):
        pass
    second = writer(resume=True, writer_id="w-second")
    run_dir.open_run(str(tmp_path), "run1", second)
    with pytest.raises(run_dir.StoreRefused, match="gpu-a01's results in this run are being written by another "
                                                   "playbook run w-live .pid %d" % os.getpid()):
        with run_dir.claimed_host_dir(str(tmp_path), "run1", "gpu-a01", second):
            pass


def test_a_host_left_by_a_finished_writer_is_taken_only_when_resuming(tmp_path):
    gone = writer(writer_id="w-gone", pid=dead_pid())
    run_dir.open_run(str(tmp_path), "run1", gone)
    with run_dir.claimed_host_dir(str(tmp_path), "run1", "gpu-a01", gone):
        pass
    with pytest.raises(run_dir.StoreRefused, match="were written by an earlier playbook run w-gone"):
        with run_dir.claimed_host_dir(str(tmp_path), "run1", "gpu-a01", writer(writer_id="w-late")):
            pass
    resumer = writer(resume=True, writer_id="w-resume")
    with run_dir.claimed_host_dir(str(tmp_path), "run1", "gpu-a01", resumer):
        pass
    with open(tmp_path / "run1" / "gpu-a01" / "writer.json") as handle:
        assert json.load(handle)["writer_id"] == "w-resume"


def test_a_host_directory_that_is_a_link_is_refused_at_the_claim(tmp_path):
    outside = tmp_path / "outside"
    outside.mkdir()
    mine = writer()
    run_dir.open_run(str(tmp_path / "results"), "run1", mine)
    os.symlink(str(outside), str(tmp_path / "results" / "run1" / "gpu-a01"))
    with pytest.raises(run_dir.StoreRefused, match="gpu-a01 is a symbolic link"):
        with run_dir.claimed_host_dir(str(tmp_path / "results"), "run1", "gpu-a01", mine):
            pass
    assert os.listdir(outside) == []


# ---------------------------------------------------------------- names and sizes

@pytest.mark.parametrize("name", ["a" * 300, "é" * 200, "rack1/" * 60, "x" * 119 + "%"])
def test_long_host_names_get_bounded_distinct_directory_names(name):
    encoded = host_dir_name(name)
    assert len(encoded) <= HOST_DIR_NAME_MAX and "/" not in encoded
    assert host_dir_name(name + "b") != encoded and host_dir_name(name[:-1] + "z") != encoded
    cut, digest_part = encoded.rsplit("~", 1)
    assert re.fullmatch(r"(?:[A-Za-z0-9._-]|%[0-9A-F]{2})+", cut) and re.fullmatch(r"[0-9a-f]{16}", digest_part)


def test_short_names_keep_their_readable_directory_names():
    assert host_dir_name("gpu-a01.rack1") == "gpu-a01.rack1" and host_dir_name("a b") == "a%20b"


def test_a_huge_raw_output_keeps_its_head_and_tail_and_says_what_was_cut():
    raw = "HEAD" + "x" * (3 * RAW_LIMIT_BYTES) + "TAIL"
    kept = bounded_raw(raw)
    assert len(kept.encode("utf-8")) < RAW_LIMIT_BYTES + 200
    assert kept.startswith("HEAD") and kept.endswith("TAIL")
    assert "of %d bytes cut here" % len(raw) in kept
    assert bounded_raw("small") == "small"
