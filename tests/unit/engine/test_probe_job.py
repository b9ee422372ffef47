"""A probe's detached job on its host (plugins/module_utils/probe_job.py): started, waited for, lost, refused."""
import json
import os
import signal
import time

import pytest

from ansible_collections.gpufleet.validation.plugins.module_utils import probe_job

JOB = "0123456789abcdef0123456789abcdef"


def runner_gone(job_dir, within_s=10.0):
    """The job directory's names once no runner's pid file or work directory is left in it: the runner removes both just
    after writing its result, so a wait may return (and a loaded machine list the directory) a moment before."""
    deadline = time.monotonic() + within_s
    while any(name.endswith((".pid", ".work")) for name in os.listdir(job_dir)) and time.monotonic() < deadline:
        time.sleep(0.02)
    return os.listdir(job_dir)


def test_a_job_runs_detached_and_its_result_is_kept_taken_for_a_wait_asked_again(tmp_path):
    job_dir = str(tmp_path / "jobs")
    our_session = os.getsid(0)

    def run(work_dir):
        time.sleep(0.3)
        return {"envelope": {"status": "ok"}, "own_session": os.getsid(0) != our_session,
                "session_leader": os.getsid(0) == os.getpid()}

    started = time.monotonic()
    probe_job.start_detached(job_dir, JOB, run)
    assert time.monotonic() - started < 0.3  # returned before the job ended
    assert probe_job.job_state(job_dir, JOB) == ("running", None)
    state, result = probe_job.wait_for_job(job_dir, JOB, 10)
    assert state == "finished" and result["envelope"] == {"status": "ok"}
    # A session of its own (no SSH session or terminal can signal it), whose leader it is not (it cannot get a terminal).
    assert result["own_session"] and not result["session_leader"]
    assert runner_gone(job_dir) == [JOB + ".taken"]  # pid file and work directory removed, the result taken
    assert stat_mode(job_dir) == 0o700
    # Issue 45: a wait the controller gave up on (answered past its deadline) had taken the result, and the wait asked
    # again found "the probe's job is not on the host any more"
    assert probe_job.wait_for_job(job_dir, JOB, 10) == ("finished", result)


def test_taken_results_are_removed_by_a_later_start_once_a_day_and_an_hour_old(tmp_path):
    job_dir = tmp_path / "jobs"
    job_dir.mkdir(mode=0o700)
    old, fresh, other = job_dir / (JOB + ".taken"), job_dir / ("f" * 32 + ".taken"), job_dir / "notes.taken"
    for path in (old, fresh, other):
        path.write_text("{}")
    now = time.time()
    os.utime(str(old), (now - probe_job.TAKEN_KEEP_S - 1,) * 2)
    os.utime(str(other), (now - probe_job.TAKEN_KEEP_S - 1,) * 2)
    probe_job.start_detached(str(job_dir), "e" * 32, lambda work_dir: {"done": True})
    assert probe_job.wait_for_job(str(job_dir), "e" * 32, 10) == ("finished", {"done": True})
    assert sorted(runner_gone(str(job_dir))) == sorted(["e" * 32 + ".taken", fresh.name, other.name])


def test_a_wait_returns_when_its_time_is_up_and_the_job_goes_on(tmp_path):
    job_dir = str(tmp_path / "jobs")
    probe_job.start_detached(job_dir, JOB, lambda work_dir: time.sleep(1.5) or {"done": True})
    began = time.monotonic()
    assert probe_job.wait_for_job(job_dir, JOB, 0.2) == ("running", None)
    assert 0.2 <= time.monotonic() - began < 1.0
    assert probe_job.wait_for_job(job_dir, JOB, 10) == ("finished", {"done": True})


def test_an_exception_in_the_job_becomes_a_failed_result_with_its_traceback(tmp_path):
    job_dir = str(tmp_path / "jobs")

    def run(work_dir):
        raise ValueError("archive member '../x' would be written outside the work directory")

    probe_job.start_detached(job_dir, JOB, run)
    state, result = probe_job.wait_for_job(job_dir, JOB, 10)
    assert state == "finished" and result["failed"] is True
    assert "the probe's runner failed on the host" in result["msg"] and "would be written outside" in result["msg"]


def test_a_runner_killed_without_a_result_is_lost_at_once_not_waited_for(tmp_path):
    job_dir = str(tmp_path / "jobs")
    probe_job.start_detached(job_dir, JOB, lambda work_dir: time.sleep(60) or {})
    pid_path, result_path, unused_work = probe_job.job_paths(job_dir, JOB)
    with open(pid_path) as handle:
        pid = json.load(handle)["pid"]
    os.kill(pid, signal.SIGKILL)
    began = time.monotonic()
    state, why = probe_job.wait_for_job(job_dir, JOB, 30)
    while state == "running" and time.monotonic() - began < 5:  # the dead runner may stay a zombie for a moment
        state, why = probe_job.wait_for_job(job_dir, JOB, 0.2)
    assert state == "lost" and "its runner ended without a result" in why, (state, why)
    assert time.monotonic() - began < 5
    assert not os.path.exists(result_path)


def test_a_pid_file_of_a_reused_pid_is_not_taken_for_the_runner(tmp_path):
    job_dir = tmp_path / "jobs"
    job_dir.mkdir(mode=0o700)
    pid_path, unused_result, unused_work = probe_job.job_paths(str(job_dir), JOB)
    # This process is alive, but it started at another time than the runner recorded: another process has the pid.
    with open(pid_path, "w") as handle:
        json.dump({"pid": os.getpid(), "start_ticks": -1}, handle)
    assert probe_job.job_state(str(job_dir), JOB)[0] == "lost"


@pytest.mark.parametrize("job_id", ["../etc/passwd", "0123", JOB + "0", JOB.upper(), "", None])
def test_a_job_id_that_could_name_another_file_is_refused(tmp_path, job_id):
    with pytest.raises(ValueError, match="is not 32 hexadecimal digits"):
        probe_job.job_state(str(tmp_path), job_id)


def test_a_result_file_that_is_a_symlink_is_never_followed(tmp_path):
    job_dir = tmp_path / "jobs"
    job_dir.mkdir(mode=0o700)
    secret = tmp_path / "secret"
    secret.write_text('{"stolen": true}')
    unused_pid, result_path, unused_work = probe_job.job_paths(str(job_dir), JOB)
    os.symlink(str(secret), result_path)
    with pytest.raises(OSError):
        probe_job.job_state(str(job_dir), JOB)
    assert secret.read_text() == '{"stolen": true}'


def test_a_job_directory_that_is_a_symlink_is_refused(tmp_path):
    real = tmp_path / "real"
    real.mkdir()
    os.symlink(str(real), str(tmp_path / "jobs"))
    with pytest.raises(ValueError, match="is not a directory"):
        probe_job.start_detached(str(tmp_path / "jobs"), JOB, lambda work_dir: {})
    assert os.listdir(str(real)) == []


def stat_mode(path):
    return os.stat(path).st_mode & 0o777
