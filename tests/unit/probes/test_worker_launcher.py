"""probelib.measure.launcher (the worker processes of the collective and the together phases) and curve.describe_failure:
deadlines, killed process groups, failure reasons."""
import json
import os
import signal
import subprocess
import sys
import time

from probe_packages.collective.curve import CurveRequest, describe_failure
from probelib.measure import launcher

PROBES = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", "..", "probes"))
SLEEPER_WITH_CHILD = """
import os, subprocess, sys, time
child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(120)"])
with open(sys.argv[1], "w") as handle:
    handle.write(str(child.pid))
time.sleep(120)
"""


def alive(pid):
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    try:
        with open("/proc/%d/stat" % pid) as handle:
            return handle.read().split(")")[-1].split()[0] != "Z"
    except OSError:
        return False


def wait_for_file(path, seconds=30):
    deadline = time.monotonic() + seconds
    while not os.path.exists(path) or not open(path).read().strip():
        assert time.monotonic() < deadline, "%s never appeared" % path
        time.sleep(0.05)
    return open(path).read().strip()


def spec(tmp_path, rank, code):
    script = tmp_path / ("w%d.py" % rank)
    script.write_text(code)
    return launcher.WorkerSpec(rank=rank, argv=[sys.executable, str(script), str(tmp_path / ("child%d" % rank))], env=dict(os.environ),
                               stdout_path=str(tmp_path / ("%d.out" % rank)), stderr_path=str(tmp_path / ("%d.err" % rank)),
                               result_path=str(tmp_path / ("%d.json" % rank)))


def test_the_deadline_kills_every_worker_and_their_children(tmp_path):
    specs = [spec(tmp_path, 0, SLEEPER_WITH_CHILD), spec(tmp_path, 1, SLEEPER_WITH_CHILD)]
    started = time.monotonic()
    outcome = launcher.run_workers(specs, deadline_s=2.0)
    assert time.monotonic() - started < 15
    assert outcome.timed_out and sorted(outcome.killed_ranks) == [0, 1]
    assert all(code is not None and code < 0 for code in outcome.returncodes)
    for rank in (0, 1):
        child = int(open(str(tmp_path / ("child%d" % rank))).read())
        deadline = time.monotonic() + 5
        while alive(child) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert not alive(child), "the worker's child %d survived" % child


def test_a_failing_worker_brings_the_others_down_after_the_grace(tmp_path):
    failing = spec(tmp_path, 0, "import sys\nsys.stderr.write('rank 0: CUDA error: out of memory\\n')\nsys.exit(3)\n")
    waiting = spec(tmp_path, 1, SLEEPER_WITH_CHILD)
    started = time.monotonic()
    outcome = launcher.run_workers([failing, waiting], deadline_s=60.0, failure_grace_s=0.5)
    assert time.monotonic() - started < 15
    assert not outcome.timed_out and outcome.first_failed_rank == 0 and outcome.killed_ranks == [1]
    assert outcome.returncodes[0] == 3 and outcome.returncodes[1] < 0
    assert launcher.stderr_tail(launcher.read_text(failing.stderr_path)) == "rank 0: CUDA error: out of memory"


def test_workers_that_succeed_are_reaped(tmp_path):
    outcome = launcher.run_workers([spec(tmp_path, 0, "print('ok')\n"), spec(tmp_path, 1, "print('ok')\n")], deadline_s=60.0)
    assert outcome.returncodes == [0, 0] and not outcome.timed_out and outcome.first_failed_rank is None


def test_sigterm_to_the_probe_kills_its_workers(tmp_path):
    holder = tmp_path / "holder.py"
    holder.write_text(
        "import os, sys\nsys.path.insert(0, %r)\nfrom probelib.measure import launcher\n"
        "spec = launcher.WorkerSpec(0, [sys.executable, %r, %r], dict(os.environ), %r, %r, %r)\n"
        "launcher.run_workers([spec], 120)\n" % (
            PROBES, str(tmp_path / "w.py"), str(tmp_path / "child"), str(tmp_path / "o"), str(tmp_path / "e"), str(tmp_path / "r")))
    (tmp_path / "w.py").write_text(SLEEPER_WITH_CHILD)
    process = subprocess.Popen([sys.executable, str(holder)])
    child = int(wait_for_file(str(tmp_path / "child")))
    process.send_signal(signal.SIGTERM)
    assert process.wait(timeout=30) == -signal.SIGTERM
    deadline = time.monotonic() + 5
    while alive(child) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not alive(child)


def test_the_worker_dies_with_the_probe_even_by_sigkill(tmp_path):
    """A rank waiting for a rendezvous that never comes must not outlive a probe killed with SIGKILL."""
    (tmp_path / "spec.json").write_text(json.dumps({"plan": {"kind": "cpu", "backend": "gloo", "world_size": 2},
                                                    "rendezvous_timeout_s": 120, "collective_timeout_s": 60}))
    holder = tmp_path / "holder.py"
    holder.write_text(
        "import os, subprocess, sys, time\n"
        "env = dict(os.environ, RANK='1', WORLD_SIZE='2', LOCAL_RANK='0', MASTER_ADDR='127.0.0.1', MASTER_PORT='9')\n"
        "subprocess.Popen([sys.executable, %r, '--library-dir', %r, '--spec', %r, '--out', %r, '--parent-pid', str(os.getpid())],"
        " env=env, start_new_session=True)\n"
        "time.sleep(120)\n" % (os.path.join(PROBES, "probe_packages", "collective", "worker.py"), PROBES,
                               str(tmp_path / "spec.json"), str(tmp_path / "result.json")))
    process = subprocess.Popen([sys.executable, str(holder)])
    deadline = time.monotonic() + 60
    result = None
    while time.monotonic() < deadline:
        result = launcher.read_result(str(tmp_path / "result.json"))
        if result and result.get("phase") == "rendezvous":
            break
        time.sleep(0.1)
    assert result and result["phase"] == "rendezvous", result
    worker = result["pid"]
    assert alive(worker)
    process.kill()
    process.wait(timeout=10)
    deadline = time.monotonic() + 10
    while alive(worker) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not alive(worker)


def test_stderr_tail_drops_stack_frames_and_nccl_chatter():
    text = ("h:1:2 [0] NCCL INFO Channel 00/0 : 0[0] -> 1[1] via P2P/CUMEM/read\n"
            "Traceback (most recent call last):\n"
            "frame #0: c10::Error::Error() + 0x9d\n"
            "frame #1: <unknown function> + 0x1\n"
            "<omitting python frames>\n\n"
            "torch.distributed.DistBackendError: NCCL error in: ProcessGroupNCCL.cpp:1970, unhandled system error\n")
    assert launcher.stderr_tail(text) == ("Traceback (most recent call last): | torch.distributed.DistBackendError: NCCL error "
                                          "in: ProcessGroupNCCL.cpp:1970, unhandled system error")
    assert len(launcher.stderr_tail("x" * 5000)) == 1500
    assert launcher.describe_exit(-9) == "was killed by SIGKILL"
    assert launcher.describe_exit(2) == "exited with code 2"


def request(**extra):
    values = dict(name="default", plan={"backend": "gloo", "world_size": 4, "sizes_bytes": [8, 16, 32]}, ranks=[(2, 0), (3, 1)],
                  master_addr="10.0.0.1", master_port=29571, rendezvous_timeout_s=5, curve_timeout_s=10, node_rank=1,
                  ranks_per_host=2, hint="is every host of the group running?")
    values.update(extra)
    return CurveRequest(**values)


def test_failure_descriptions():
    done = {"phase": "done", "points": [{}, {}, {}]}
    assert describe_failure(request(), launcher.LaunchOutcome([0, 0], False, 1.0), [done, done], ["", ""]) is None
    assert describe_failure(request(), launcher.LaunchOutcome([0, -14], False, 1.0), [done, done], ["", ""]) is None

    missing = {"phase": "rendezvous", "error": "only 2 of 4 ranks joined within 5 s: missing rank(s) 0-1", "joined": 2,
               "missing_ranks": [0, 1]}
    what, message = describe_failure(request(), launcher.LaunchOutcome([1, 1], False, 5.0, first_failed_rank=2),
                                     [missing, missing], ["", ""])
    assert what == "rendezvous"
    assert message == ("only 2 of 4 ranks joined within 5 s: missing rank(s) 0-1 on node_rank(s) 0 "
                       "(is every host of the group running?)")

    crashed = {"phase": "sweep", "points": [{}]}
    what, message = describe_failure(request(), launcher.LaunchOutcome([-11, -15], False, 5.0, [3], 2), [crashed, crashed],
                                     ["Segmentation fault\n", ""])
    assert what == "sweep" and message == "rank 2 was killed by SIGSEGV during sweep without a result: Segmentation fault"

    raised = {"phase": "sweep", "error": "DistBackendError: NCCL error", "traceback": "..."}
    what, message = describe_failure(request(), launcher.LaunchOutcome([1, -15], False, 5.0, [3], 2), [raised, crashed], ["", ""])
    assert (what, message) == ("sweep", "rank 2 failed during sweep: DistBackendError: NCCL error")

    what, message = describe_failure(request(), launcher.LaunchOutcome([-15, -15], True, 45.0, [2, 3], None),
                                     [crashed, None], ["still waiting\n", ""])
    assert what == "timeout"
    assert message == ("the workers did not finish within 45 s and were killed (rank 2 sweep, rank 3 not started; 1 of 3 sizes "
                       "measured): still waiting")


def test_missing_ranks_are_written_as_ranges():
    from probe_packages.collective.worker import _ranges  # pylint: disable=import-outside-toplevel

    assert _ranges([7, 1, 2, 3]) == "1-3, 7"
    assert _ranges([0, 2, 3]) == "0, 2-3"
    assert _ranges([5]) == "5" and _ranges([]) == ""


def test_workers_that_cannot_start_make_a_failed_curve(tmp_path):
    from probe_packages.collective.curve import run_curve  # pylint: disable=import-outside-toplevel

    curve, errors, results = run_curve(request(), dict(os.environ), python=str(tmp_path / "no-such-python"))
    assert curve["sweep"] == [] and curve["error"].startswith("the workers could not be started: FileNotFoundError")
    assert errors == [{"curve": "default", "what": "start", "error": curve["error"]}] and results == [None, None]
