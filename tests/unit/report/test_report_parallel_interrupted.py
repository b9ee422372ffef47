"""A report stopped while its workers render ends every worker: none lives on, none writes a file afterwards, and none
leaves a file half-written; for Ctrl-C (SIGINT to the process group), SIGTERM to the report, and SIGKILL of the report
(as Ansible's worker process dies on a signal, without unwinding).

Each case runs a real process: report_parallel.run_indexed over two forked workers, every job writing a 200 kB file
atomically (the store's writer) and naming it with the pid of the worker that wrote it.
"""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
JOBS = 400
FILE_BYTES = 200_000
# The driver is a report run from a terminal: Python's own Ctrl-C handler, even where the test runs from a shell that
# started it in the background (such a shell ignores SIGINT for it, Python keeps that, and the Ctrl-C would do nothing).
DRIVER = r"""
import os, signal, sys, time
signal.signal(signal.SIGINT, signal.default_int_handler)
sys.path.insert(0, sys.argv[2])
from ansible_collections.gpufleet.validation.plugins.plugin_utils.report.parallel import run_indexed
from ansible_collections.gpufleet.validation.plugins.plugin_utils.store.atomic import write_text_atomically
out = sys.argv[1]

def job(index):
    time.sleep(0.05)
    write_text_atomically(os.path.join(out, "item-%04d-pid-%d" % (index, os.getpid())), "x" * %(bytes)d, root=out)
    return index

run_indexed(%(jobs)d, job, 2, chunk_items=5)
""".replace("%(bytes)d", str(FILE_BYTES)).replace("%(jobs)d", str(JOBS))


def _start(out):
    return subprocess.Popen([sys.executable, "-c", DRIVER, str(out), os.path.join(ROOT, "collections")],
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, start_new_session=True)


def _wait_for_files(out, count, process, timeout_s=60.0):
    deadline = time.monotonic() + timeout_s
    while len(os.listdir(out)) < count:
        assert process.poll() is None, process.communicate()[0]
        assert time.monotonic() < deadline, "fewer than %d files after %.0f s" % (count, timeout_s)
        time.sleep(0.02)


def _alive(pid):
    try:
        with open("/proc/%d/stat" % pid) as handle:
            return handle.read().rsplit(")", 1)[1].split()[0] not in ("Z", "X")
    except OSError:
        return False


def _worker_pids(out, parent):
    return {int(name.rsplit("-", 1)[1]) for name in os.listdir(out) if "-pid-" in name} - {parent}


def _kill_left_workers(out, parent):
    for pid in _worker_pids(out, parent):
        if _alive(pid):
            os.kill(pid, signal.SIGKILL)


def _assert_nothing_lives_or_writes_on(out, parent):
    workers = _worker_pids(out, parent)
    assert workers, "no worker wrote a file: the run was not forked"
    deadline = time.monotonic() + 10.0
    while [pid for pid in workers if _alive(pid)] and time.monotonic() < deadline:
        time.sleep(0.05)
    assert [pid for pid in workers if _alive(pid)] == [], "workers outlived the report"
    written = sorted(os.listdir(out))
    time.sleep(1.0)
    assert sorted(os.listdir(out)) == written, "files appeared after the report ended"
    assert len(written) < JOBS, "the stop stopped nothing: every job ran"
    assert [name for name in written if name.startswith(".tmp-")] == [], "a temporary file was left"
    assert {os.path.getsize(os.path.join(out, name)) for name in written} == {FILE_BYTES}


def _stop_and_check(out, stop):
    process = _start(out)
    try:
        _wait_for_files(out, 20, process)
        stop(process)
        output = process.communicate(timeout=30)[0].decode("utf-8", "replace")
        _assert_nothing_lives_or_writes_on(out, process.pid)
        return process.returncode, output
    finally:
        process.kill()
        _kill_left_workers(out, process.pid)  # only after the checks: a failed test leaves no orphan behind


def test_ctrl_c_to_the_process_group_ends_every_worker(tmp_path):
    code, output = _stop_and_check(tmp_path, lambda process: os.killpg(process.pid, signal.SIGINT))
    assert code == -signal.SIGINT or "KeyboardInterrupt" in output, (code, output)


def test_sigterm_to_the_report_ends_every_worker_and_then_the_report(tmp_path):
    code, output = _stop_and_check(tmp_path, lambda process: process.send_signal(signal.SIGTERM))  # not to its workers
    assert code == -signal.SIGTERM, (code, output)


def test_workers_of_a_report_killed_without_unwinding_end_with_it(tmp_path):
    # As Ansible's worker process dies on SIGINT or SIGTERM (it kills itself): no handler here runs.
    _stop_and_check(tmp_path, lambda process: process.send_signal(signal.SIGKILL))
