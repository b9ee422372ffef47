"""A resume after a killed writer says the writer is gone and keeps what it finished (docs/store.md, "Resuming after a
killed writer"): plugins/plugin_utils/store/run_dir.py's gone_writers, gone_writer_line and finished_earlier."""
import os
import subprocess
import time

from ansible_collections.gpufleet.validation.plugins.module_utils.probe_envelope import failure_envelope
from ansible_collections.gpufleet.validation.plugins.module_utils.process_tree import start_ticks
from ansible_collections.gpufleet.validation.plugins.plugin_utils.store import run_dir
from ansible_collections.gpufleet.validation.plugins.plugin_utils.store.results import store_result_at


def _writer(writer_id, pid, resume=True):
    record = run_dir.playbook_writer(resume, "quick")
    record.update(writer_id=writer_id, pid=pid, pid_start_ticks=start_ticks(pid))
    return record


def _dead_pid():
    pid = os.fork()
    if pid == 0:
        os._exit(0)  # pylint: disable=protected-access
    os.waitpid(pid, 0)
    return pid


def test_a_resume_keeps_an_earlier_writers_finished_results_and_probes_what_has_none(tmp_path):
    gone = _writer("w-gone", _dead_pid(), resume=False)
    run_dir.open_run(str(tmp_path), "run1", gone)
    shown = str(tmp_path / "run1" / "gpu-a01")
    with run_dir.claimed_host_dir(str(tmp_path), "run1", "gpu-a01", gone) as host_fd:
        store_result_at(host_fd, "health", failure_envelope("health", "gpu-a01", "unavailable", "no NVML"), None, shown)
        store_result_at(host_fd, "membw", failure_envelope("membw", "gpu-a01", "unreachable", "lost"), None, shown)
    time.sleep(0.2)  # more than the 10 ms of a clock tick and of /proc/uptime
    playbook = subprocess.Popen(["sleep", "30"])  # the resuming playbook: a process started after those results
    try:
        resumer = _writer("w-resume", playbook.pid)
        record = run_dir.open_run(str(tmp_path), "run1", resumer)
        assert [entry["writer_id"] for entry in run_dir.gone_writers(record, resumer)] == ["w-gone"]
        assert run_dir.gone_writer_line("run1", gone) == (
            "the writer of run run1 (pid %d on %s, started %s) is gone: the results it finished are kept and only what "
            "has no result is probed now (docs/store.md)" % (gone["pid"], gone["controller"], gone["started"]))
        with run_dir.claimed_host_dir(str(tmp_path), "run1", "gpu-a01", resumer) as host_fd:
            assert run_dir.finished_earlier(host_fd, "health", resumer, shown) == "unavailable"  # kept
            assert run_dir.finished_earlier(host_fd, "membw", resumer, shown) is None  # not reached: probed again
            assert run_dir.finished_earlier(host_fd, "gemm", resumer, shown) is None  # no result: probed
            time.sleep(0.2)  # as a playbook's first result comes seconds after it started, never within a clock tick
            store_result_at(host_fd, "gemm", failure_envelope("gemm", "gpu-a01", "unavailable", "no GPU"), None, shown)
            assert run_dir.finished_earlier(host_fd, "gemm", resumer, shown) is None  # this playbook run's own
    finally:
        playbook.kill()
        playbook.wait()


def test_a_live_earlier_writer_is_not_called_gone(tmp_path):
    live = _writer("w-live", os.getpid())
    record = run_dir.open_run(str(tmp_path), "run1", live)
    assert not run_dir.gone_writers(record, _writer("w-other", os.getpid()))
