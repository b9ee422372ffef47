# -*- coding: utf-8 -*-
# Copyright: gpufleet.validation contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""A probe's job on its host: started detached by gpufleet.validation.probe, waited for by gpufleet.validation.probe_wait.

One module run starts the job and returns at once; each wait is one module run that blocks on the host until the job
ends or its wait is up. So a probe costs two round trips when it ends within the first wait, instead of a temporary
directory, three transfers and a poll every few seconds (docs/scale.md).

In the job directory (mode 0700) a job ``J`` has:
  J.pid     the runner's pid and start time, written by the runner before it does anything else, removed when it ends
  J.json    the result, written atomically (temporary name, then rename) when the runner is done
  J.work/   the runner's work directory (the unpacked probe, its files), removed when it ends
  J.taken   the result once probe_wait returned it: a wait asked again after one the controller gave up on (a slow
            answer, docs/connections.md) still finds it; removed by a later job's start once TAKEN_KEEP_S old (a
            result the start's own first wait returned is removed at once)
"""
from __future__ import annotations

import json
import os
import re
import shutil
import stat
import time
import traceback

from ansible_collections.gpufleet.validation.plugins.module_utils.process_tree import start_ticks, still_running

JOB_ID_RE = re.compile(r"^[0-9a-f]{32}$")
TAKEN_NAME_RE = re.compile(r"^[0-9a-f]{32}\.taken$")
# A wait may be asked again until the job's own limit (at most a day, probe_spec.PROBE_TIMEOUT_LIMIT_S) + 120 s.
TAKEN_KEEP_S = 86400 + 3600
PID_FILE_WAIT_S = 10.0
WAIT_STEP_S = 0.05


def job_paths(job_dir, job_id):
    """(pid file, result file, work directory) of a job; refuses an id that could name anything else."""
    if not JOB_ID_RE.match(job_id or ""):
        raise ValueError("job id %r is not 32 hexadecimal digits" % (job_id,))
    base = os.path.join(job_dir, job_id)
    return base + ".pid", base + ".json", base + ".work"


def taken_path(job_dir, job_id):
    """Where a job's result lies once a wait returned it."""
    job_paths(job_dir, job_id)
    return os.path.join(job_dir, job_id + ".taken")


def remove_old_taken(job_dir, now=None):
    """Remove the results waits returned more than TAKEN_KEEP_S ago (regular files of the job name's form only)."""
    now = time.time() if now is None else now
    try:
        names = os.listdir(job_dir)
    except OSError:
        return
    for name in names:
        if not TAKEN_NAME_RE.match(name):
            continue
        path = os.path.join(job_dir, name)
        try:
            info = os.lstat(path)
            if stat.S_ISREG(info.st_mode) and now - info.st_mtime > TAKEN_KEEP_S:
                os.unlink(path)
        except OSError:
            continue


def make_job_dir(job_dir):
    """Create the job directory (0700) if needed; refuse one that is a symlink or not ours."""
    os.makedirs(job_dir, mode=0o700, exist_ok=True)
    info = os.lstat(job_dir)
    if not os.path.isdir(job_dir) or os.path.islink(job_dir):
        raise ValueError("the job directory %s is not a directory" % job_dir)
    if info.st_uid != os.getuid():
        raise ValueError("the job directory %s belongs to uid %d, not to this user (%d)" % (job_dir, info.st_uid, os.getuid()))


def _write_private(path, data):
    """Write ``data`` to ``path`` atomically, never through a symlink, readable by this user only."""
    temporary = "%s.tmp-%d" % (path, os.getpid())
    descriptor = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
    with os.fdopen(descriptor, "w") as handle:
        handle.write(data)
    os.replace(temporary, path)


def _read_private(path):
    try:
        descriptor = os.open(path, os.O_RDONLY | os.O_NOFOLLOW)
    except FileNotFoundError:
        return None
    with os.fdopen(descriptor) as handle:
        return handle.read()


def start_detached(job_dir, job_id, run):
    """Run ``run(work_dir)`` in a detached runner (its own session, stdio on /dev/null) and return once the runner has
    recorded itself. ``run`` returns the job's result (a JSON-able dict); an exception becomes a failed result."""
    pid_path, result_path, work_dir = job_paths(job_dir, job_id)
    make_job_dir(job_dir)
    remove_old_taken(job_dir)
    os.mkdir(work_dir, 0o700)
    first = os.fork()
    if first:
        os.waitpid(first, 0)
        deadline = time.monotonic() + PID_FILE_WAIT_S
        while not (os.path.exists(pid_path) or os.path.exists(result_path)):
            if time.monotonic() >= deadline:
                raise RuntimeError("the probe's runner did not start within %.0f s" % PID_FILE_WAIT_S)
            time.sleep(0.01)
        return
    # The first child: a new session, then the runner as its child, so no terminal or SSH session can signal it.
    try:
        os.setsid()
        if os.fork():
            os._exit(0)  # pylint: disable=protected-access
        _become_runner(pid_path, result_path, work_dir, run)
    finally:
        os._exit(0)  # pylint: disable=protected-access  # never return into the module's own exit path


def _become_runner(pid_path, result_path, work_dir, run):
    devnull = os.open(os.devnull, os.O_RDWR)
    for descriptor in (0, 1, 2):
        os.dup2(devnull, descriptor)
    os.umask(0o077)
    try:
        _write_private(pid_path, json.dumps({"pid": os.getpid(), "start_ticks": start_ticks(os.getpid())}))
        try:
            result = run(work_dir)
        except BaseException:  # pylint: disable=broad-except
            why = traceback.format_exc(limit=5).strip()[-2000:]
            result = {"failed": True, "msg": "the probe's runner failed on the host: %s" % why}
        _write_private(result_path, json.dumps(result))
    finally:
        shutil.rmtree(work_dir, ignore_errors=True)
        try:
            os.unlink(pid_path)
        except OSError:
            pass


def job_state(job_dir, job_id, keep_taken=True):
    """("finished", result) with the result file moved to its taken name (removed instead where not keep_taken: no
    later wait can ask), ("running", None), or ("lost", why)."""
    pid_path, result_path, unused_work_dir = job_paths(job_dir, job_id)
    taken = taken_path(job_dir, job_id)
    for unused_attempt in range(2):  # the runner may finish between reading its pid file and its result
        text = _read_private(result_path)
        if text is not None:
            if keep_taken:
                os.replace(result_path, taken)
            else:
                os.unlink(result_path)
            return "finished", json.loads(text)
        text = _read_private(taken)
        if text is not None:  # returned to a wait the controller gave up on: this one asks again
            return "finished", json.loads(text)
        recorded = _read_private(pid_path)
        if recorded is None:
            continue
        runner = json.loads(recorded)
        if still_running(runner["pid"], runner.get("start_ticks")):
            return "running", None
    return "lost", ("the probe's job %s is not on the host any more: its runner ended without a result (killed, or "
                    "its job directory %s was cleaned)" % (job_id, job_dir))


def wait_for_job(job_dir, job_id, wait_s, keep_taken=True):
    """Block until the job ends or ``wait_s`` passes; job_state's answer at that point."""
    deadline = time.monotonic() + max(0.0, wait_s)
    while True:
        state, detail = job_state(job_dir, job_id, keep_taken)
        if state != "running" or time.monotonic() >= deadline:
            return state, detail
        time.sleep(WAIT_STEP_S)


def wait_answer(job_dir, job_id, wait_s, keep_taken=True):
    """What a module that waited for the job answers (probe_wait, and the probe module's first wait): {"finished":
    False}, {"finished": True, "result": the job's result}, or {"failed": True, "finished": True, "msg": why} when the
    job cannot be read or its runner is gone without a result. keep_taken: False for the start's own first wait, which
    no later wait repeats (a start given up on is not asked again)."""
    try:
        state, detail = wait_for_job(job_dir, job_id, wait_s, keep_taken)
    except (OSError, ValueError) as exc:
        return {"failed": True, "finished": True, "msg": "could not read the probe's job: %s" % exc}
    if state == "lost":
        return {"failed": True, "finished": True, "msg": detail}
    return {"finished": True, "result": detail} if state == "finished" else {"finished": False}
