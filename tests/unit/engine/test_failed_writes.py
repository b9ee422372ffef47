"""A result whose write fails is reported as a failed write with its errno, never as a host that was not reached: the
store leaves an empty <probe>.write-failed-<ERRNO> beside the host's results (it needs no data block, so it can be
made on a full file system), and the report reads it back after the space is freed (docs/store.md, "Failed writes").

One case fills a real tmpfs (as root), one injects ENOSPC at the atomic writer, one writes the result again later.
"""
import errno
import os
import subprocess

import pytest

from ansible_collections.gpufleet.validation.plugins.module_utils.probe_envelope import failure_envelope
from ansible_collections.gpufleet.validation.plugins.plugin_utils.store import results as store_results
from ansible_collections.gpufleet.validation.plugins.plugin_utils.store import run_dir
from ansible_collections.gpufleet.validation.plugins.plugin_utils.run_judgement import judge_run
from ansible_collections.gpufleet.validation.plugins.plugin_utils.store.stored_run import load_run

RUN_ID = "full"
HOST = "gpu-a01"
WRITTEN_AS = "write failed: ENOSPC No space left on device"


def _open_host(results):
    writer = run_dir.playbook_writer(False, "health")
    run_dir.open_run(str(results), RUN_ID, writer)
    return writer


def _claim(results, writer):
    shown = os.path.join(str(results), RUN_ID, HOST)
    with run_dir.claimed_host_dir(str(results), RUN_ID, HOST, writer) as host_fd:
        run_dir.write_host_inputs(host_fd, run_dir.host_inputs(HOST, RUN_ID, writer, "health", {}, [], None), shown)


def _store(results, writer, envelope):
    """As the probe action stores a result: the host's directory claimed and its inputs written before the probe ran."""
    _claim(results, writer)
    shown = os.path.join(str(results), RUN_ID, HOST)
    with run_dir.claimed_host_dir(str(results), RUN_ID, HOST, writer) as host_fd:
        return store_results.store_result_at(host_fd, "health", envelope, None, shown)


def _ran(reason="measured"):
    return failure_envelope("health", HOST, "unavailable", reason, duration_s=1.0)


def _assert_reported_as_a_failed_write(results):
    run = load_run(os.path.join(str(results), RUN_ID), [HOST])
    host = run.hosts[0]
    assert host.state == "error", (host.state, host.reasons)
    assert any(WRITTEN_AS in reason for reason in host.reasons), host.reasons
    assert not any("not reached" in reason for reason in host.reasons), host.reasons
    verdict = judge_run(run, str(results), {}).hosts[HOST]
    # The failed write reaches the judge as that probe's error (unreadable_result.py), as an unreadable result does.
    assert verdict.verdict == "error" and verdict.reasons == [
        "health.probe_status: the health result cannot be judged: %s: the host was reached and probe health ran, but its result could not be stored; make "
        "room in the results directory (or make it writable) and probe the host again" % WRITTEN_AS], verdict.reasons


def test_a_write_that_fails_with_enospc_is_reported_as_a_failed_write(tmp_path, monkeypatch):
    results = tmp_path / "results"
    writer = _open_host(results)
    real = store_results.write_bytes_at

    def full(dir_fd, name, payload, mode=0o644, shown=None):
        if name == "health.json":
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        return real(dir_fd, name, payload, mode, shown)
    monkeypatch.setattr(store_results, "write_bytes_at", full)
    with pytest.raises(OSError):
        _store(results, writer, _ran())
    monkeypatch.undo()
    assert sorted(os.listdir(results / RUN_ID / HOST)) == ["health.write-failed-ENOSPC", "inputs.json", "writer.json"]
    _assert_reported_as_a_failed_write(results)


def test_a_result_written_after_its_failed_write_is_read_as_written(tmp_path, monkeypatch):
    results = tmp_path / "results"
    writer = _open_host(results)
    monkeypatch.setattr(store_results, "write_bytes_at", _raise_enospc)
    with pytest.raises(OSError):
        _store(results, writer, _ran())
    monkeypatch.undo()
    _store(results, writer, _ran("measured again"))
    assert sorted(os.listdir(results / RUN_ID / HOST)) == ["health.json", "inputs.json", "writer.json"]
    host = load_run(os.path.join(str(results), RUN_ID), [HOST]).hosts[0]
    assert host.state == "unavailable" and host.reasons == ["health: measured again"], host.reasons


def _raise_enospc(*unused_args, **unused_kwargs):
    raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))


def test_a_results_tmpfs_that_fills_while_a_result_is_written(tmp_path):
    if os.geteuid() != 0:
        pytest.skip("mounting a tmpfs needs root")
    results = tmp_path / "results"
    results.mkdir()
    mounted = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=256k", "tmpfs", str(results)], capture_output=True,
                             text=True, check=False)
    if mounted.returncode != 0:
        pytest.skip("cannot mount a tmpfs here: %s" % mounted.stderr.strip())
    try:
        writer = _open_host(results)
        _claim(results, writer)  # before the probe runs
        filler = results / "filler"
        with pytest.raises(OSError) as raised:
            with open(filler, "wb") as handle:
                while True:
                    handle.write(b"\0" * 4096)
                    handle.flush()
        assert raised.value.errno == errno.ENOSPC
        shown = os.path.join(str(results), RUN_ID, HOST)
        with run_dir.claimed_host_dir(str(results), RUN_ID, HOST, writer) as host_fd:
            with pytest.raises(OSError) as raised:
                store_results.store_result_at(host_fd, "health", _ran("x" * 100_000), None, shown)
        assert raised.value.errno == errno.ENOSPC
        os.unlink(filler)  # space freed, then the report
        assert not [name for name in os.listdir(results / RUN_ID / HOST) if name.startswith(".tmp-")]
        _assert_reported_as_a_failed_write(results)
    finally:
        subprocess.run(["umount", str(results)], check=False)
