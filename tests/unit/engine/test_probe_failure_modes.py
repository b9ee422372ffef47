"""The probe engine against real processes: every way a probe can fail becomes an envelope with a reason."""
import json
import os
import signal
import sys
import time

import pytest

from ansible_collections.gpufleet.validation.plugins.module_utils.probe_envelope import interpret
from ansible_collections.gpufleet.validation.plugins.module_utils.probe_process import read_tail, run_probe_process

FAKES = os.path.join(os.path.dirname(os.path.abspath(__file__)), "fake_probes")
PROBES_DIR = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(FAKES)))), "probes")


def _alive(pid):
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    # A zombie still answers kill(0); read its state.
    try:
        with open("/proc/%d/stat" % pid) as handle:
            return handle.read().split(")")[-1].split()[0] != "Z"
    except OSError:
        return False


def run_fake(tmp_path, script, timeout_s=30.0, params=None, python=sys.executable, kill_grace_s=5.0, extra=()):
    params_path = tmp_path / "params.json"
    params_path.write_text(json.dumps(params or {}))
    out_path = tmp_path / "result.json"
    argv = [python] + list(extra) + [os.path.join(FAKES, script), "--params", str(params_path), "--out", str(out_path)]
    env = dict(os.environ, GPUFLEET_PROBES_DIR=PROBES_DIR)
    outcome = run_probe_process(argv, timeout_s, str(tmp_path / "stdout.log"), str(tmp_path / "stderr.log"),
                                env=env, kill_grace_s=kill_grace_s)
    output = out_path.read_bytes() if out_path.exists() else None
    envelope, raw = interpret("fake", "node-01", outcome, output, read_tail(str(tmp_path / "stderr.log")),
                              "2026-11-30T00:00:00+00:00", python)
    return outcome, envelope, raw


def test_a_sound_probe_is_kept_and_stdout_noise_cannot_corrupt_it(tmp_path):
    outcome, envelope, raw = run_fake(tmp_path, "noisy_but_good.py", params={"n": 21})
    assert outcome.returncode == 0 and not outcome.timed_out
    assert envelope["status"] == "ok", envelope["reason"]
    assert envelope["data"] == {"answer_units": 42}
    assert envelope["host"] == "node-01"
    assert envelope["command"][1].endswith("noisy_but_good.py")
    assert raw is None
    assert "noise" in (tmp_path / "stdout.log").read_text()


def test_a_hanging_probe_is_killed_with_its_whole_process_group(tmp_path):
    pidfile = tmp_path / "pids"
    started = time.monotonic()
    outcome, envelope, unused_raw = run_fake(tmp_path, "hang_with_child.py", timeout_s=2, params={"pidfile": str(pidfile)})
    assert time.monotonic() - started < 15
    assert outcome.timed_out
    assert envelope["status"] == "timeout"
    assert "process group was killed" in envelope["reason"]
    child_pid, probe_pid = (int(pid) for pid in pidfile.read_text().split())
    deadline = time.monotonic() + 5
    while (_alive(child_pid) or _alive(probe_pid)) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not _alive(child_pid), "the probe's child survived the timeout"
    assert not _alive(probe_pid)


def test_a_probe_that_ignores_sigterm_is_killed_with_sigkill(tmp_path):
    outcome, envelope, unused_raw = run_fake(tmp_path, "ignores_sigterm.py", timeout_s=1, kill_grace_s=0.5)
    assert outcome.timed_out
    assert outcome.signal_number == signal.SIGKILL
    assert envelope["status"] == "timeout"


def test_a_crash_by_signal_names_the_signal_and_the_last_stderr_line(tmp_path):
    outcome, envelope, unused_raw = run_fake(tmp_path, "segfaults.py")
    assert outcome.signal_number == signal.SIGSEGV
    assert envelope["status"] == "error"
    assert "SIGSEGV" in envelope["reason"] and "signal 11" in envelope["reason"]
    assert "about to touch a bad pointer" in envelope["reason"]


def test_garbage_output_is_an_error_and_the_raw_bytes_are_kept(tmp_path):
    unused_outcome, envelope, raw = run_fake(tmp_path, "prints_garbage.py")
    assert envelope["status"] == "error"
    assert "not valid JSON" in envelope["reason"]
    assert raw == "Traceback? {not json at all"


def test_json_that_is_not_an_envelope_is_an_error(tmp_path):
    unused_outcome, envelope, raw = run_fake(tmp_path, "writes_a_list.py")
    assert envelope["status"] == "error"
    assert "expected a JSON object, found list" in envelope["reason"]
    assert raw == "[1, 2, 3]"


def test_a_nonzero_exit_without_result_reports_the_code_and_stderr(tmp_path):
    unused_outcome, envelope, unused_raw = run_fake(tmp_path, "exits_nonzero.py")
    assert envelope["status"] == "error"
    assert "exited with code 3" in envelope["reason"]
    assert "CUDA driver initialization failed" in envelope["reason"]


def test_exit_zero_without_result_is_an_error(tmp_path):
    unused_outcome, envelope, unused_raw = run_fake(tmp_path, "writes_nothing.py")
    assert envelope["status"] == "error"
    assert "exited with code 0 but wrote no result file" in envelope["reason"]


def test_a_missing_interpreter_is_named_with_the_variable_to_set(tmp_path):
    missing = str(tmp_path / "no" / "python3")
    outcome, envelope, unused_raw = run_fake(tmp_path, "noisy_but_good.py", python=missing)
    assert isinstance(outcome.spawn_error, FileNotFoundError)
    assert envelope["status"] == "error"
    assert missing in envelope["reason"] and "gpufleet_python" in envelope["reason"]


def test_missing_torch_makes_the_probe_unavailable_with_the_interpreter_named(tmp_path):
    # `python -S` skips site-packages, so torch cannot be imported whether or not it is installed.
    unused_outcome, envelope, unused_raw = run_fake(tmp_path, "needs_torch.py", extra=("-S",))
    assert envelope["status"] == "unavailable"
    assert "torch is not importable by %s" % sys.executable in envelope["reason"]
    assert "gpufleet_python" in envelope["reason"]


def test_processes_left_behind_by_a_finished_probe_are_killed(tmp_path):
    pidfile = tmp_path / "child"
    outcome, envelope, unused_raw = run_fake(tmp_path, "leaves_a_child.py", params={"pidfile": str(pidfile)})
    assert envelope["status"] == "ok", envelope["reason"]
    assert outcome.stragglers_killed
    assert any("left processes running" in note for note in envelope["notes"])
    child = int(pidfile.read_text())
    deadline = time.monotonic() + 5
    while _alive(child) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not _alive(child)


@pytest.mark.parametrize("bad_params, expected", [
    ({"n": "twenty"}, "parameter 'n' must be integer, not string 'twenty'"),
    ({"m": 1}, "unknown parameter 'm' (known: n)"),
])
def test_bad_parameters_are_refused_by_the_probe(tmp_path, bad_params, expected):
    unused_outcome, envelope, unused_raw = run_fake(tmp_path, "noisy_but_good.py", params=bad_params)
    assert envelope["status"] == "error"
    assert expected in envelope["reason"]


def test_an_interpreter_that_is_a_directory_is_named_as_one(tmp_path):
    folder = tmp_path / "venv"
    folder.mkdir()
    outcome, envelope, unused_raw = run_fake(tmp_path, "noisy_but_good.py", python=str(folder))
    assert isinstance(outcome.spawn_error, PermissionError)
    assert envelope["status"] == "error"
    assert envelope["reason"] == (
        "the interpreter %r is a directory, not a Python interpreter; set gpufleet_python (probe role: probe_python) "
        "to the Python executable itself (for example %r)" % (str(folder), str(folder / "bin" / "python3")))
