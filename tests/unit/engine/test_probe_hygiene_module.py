"""The probe module itself, run the way Ansible's debug entry point runs it (a real AnsibleModule and exit_json), its
answer read back with the controller's own decoder: whatever a probe writes, the answer is one Ansible accepts."""
import base64
import json
import os
import re
import subprocess
import sys
import zipfile

import pytest
from ansible.plugins.action import ActionBase  # the controller context: strict UTF-8 checks when decoding

from test_probe_failure_modes import FAKES, PROBES_DIR  # pylint: disable=import-error

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(FAKES))))
MODULE = os.path.join(ROOT, "plugins", "modules", "probe.py")
WAIT_MODULE = os.path.join(ROOT, "plugins", "modules", "probe_wait.py")
COLLECTIONS = os.path.join(ROOT, "collections")


class _Interpreter(object):
    _used_interpreter = None


def controller_reads(stdout):
    """The module's answer as the action plugin gets it (ActionBase._parse_returned_data, legacy profile)."""
    # pylint: disable-next=protected-access
    return ActionBase._parse_returned_data(_Interpreter(), {"stdout": stdout}, "legacy")


def run_module(tmp_path, script, params=None, env_extra=None, python=None):
    """Pack fake probe ``script`` as probe ``fake``, start it with the probe module and fetch its result with the
    probe_wait module; (the controller's view of the result, the largest peak resident memory in KiB of the module and
    of the detached runner that ran the probe)."""
    archive = tmp_path / "gpufleet-probe-fake.zip"
    with zipfile.ZipFile(str(archive), "w") as bundle:
        bundle.write(os.path.join(FAKES, script), "fake.py")
        bundle.write(os.path.join(FAKES, "_args.py"), "_args.py")
    job_dir = tmp_path / "jobs"
    args = {"name": "fake", "run_id": "r1", "archive_data": base64.b64encode(archive.read_bytes()).decode("ascii"),
            "job_dir": str(job_dir), "params": params or {}, "timeout": 60}
    if python:
        args["python"] = python
    env = dict(os.environ, PYTHONPATH=COLLECTIONS, GPUFLEET_PROBES_DIR=PROBES_DIR)
    env.update(env_extra or {})
    started, peak_kib = _module_answer(tmp_path, "start", MODULE, args, env)
    assert started.get("started") and started["job_dir"] == str(job_dir), started
    answer, unused_peak = _module_answer(tmp_path, "wait", WAIT_MODULE,
                                         {"job_id": started["job_id"], "job_dir": str(job_dir), "wait": 60}, env)
    assert answer.get("finished") is True, answer
    # the pid file and the work directory are gone; the result stays under its taken name for a wait asked again after
    # one the controller gave up on (issue 45), until a later start a day later
    assert sorted(os.listdir(str(job_dir))) == [started["job_id"] + ".taken"]
    return controller_reads(json.dumps(answer["result"])), peak_kib


def _module_answer(tmp_path, label, module, args, env):
    args_path = tmp_path / ("%s-args.json" % label)
    args_path.write_text(json.dumps({"ANSIBLE_MODULE_ARGS": args}))
    stdout_path, stderr_path = tmp_path / ("%s.stdout" % label), tmp_path / ("%s.stderr" % label)
    usage_path = tmp_path / ("%s.usage" % label)
    with open(str(stdout_path), "wb") as stdout, open(str(stderr_path), "wb") as stderr:
        # Through a small launcher: Linux carries a process's peak RSS across fork and exec, so a module forked straight
        # from this (large) pytest process would report pytest's peak, not its own. The launcher is a child subreaper,
        # so the probe's detached runner becomes its child when the module returns, and is waited for and measured too.
        code = subprocess.run([sys.executable, "-c", LAUNCHER, str(usage_path), sys.executable, module, str(args_path)],
                              stdout=stdout, stderr=stderr, env=env, check=False).returncode
    assert code == 0, stderr_path.read_text()
    answer = controller_reads(stdout_path.read_bytes().decode("utf-8"))
    assert answer.get("_ansible_parsed"), answer
    return answer, int(usage_path.read_text())


LAUNCHER = """
import ctypes, os, subprocess, sys
ctypes.CDLL(None, use_errno=True).prctl(36, 1, 0, 0, 0)  # PR_SET_CHILD_SUBREAPER
child = subprocess.Popen(sys.argv[2:])
unused_pid, status, usage = os.wait4(child.pid, 0)
peak = usage.ru_maxrss
while True:
    try:
        unused_pid, unused_status, usage = os.wait4(-1, 0)
    except ChildProcessError:
        break
    peak = max(peak, usage.ru_maxrss)
with open(sys.argv[1], "w") as handle:
    handle.write(str(peak))
sys.exit(os.waitstatus_to_exitcode(status))
"""


@pytest.mark.parametrize("case, where, what", [
    ("surrogate", "data.gpus[1].name", "holds a lone surrogate U+D800"),
    ("control", "data.gpus[1].name", "holds the control character U+001B"),
])
def test_unclean_text_in_a_result_is_an_error_that_ansible_carries_with_the_output_kept(tmp_path, case, where, what):
    answer, unused_rss = run_module(tmp_path, "writes_unclean_text.py", params={"case": case})
    envelope = answer["envelope"]
    assert envelope["status"] == answer["status"] == "error"
    assert "%s %s" % (where, what) in envelope["reason"], envelope["reason"]
    assert envelope["data"] == {}
    # What the probe wrote, as it wrote it (JSON text, so its escapes stay escapes).
    assert answer["raw_output"].startswith('{"schema_version": "1", "probe": "fake"')
    assert {"surrogate": '"eth\\ud800"', "control": '"H200\\u001b[31m"'}[case] in answer["raw_output"]


def test_a_result_that_is_not_utf8_is_an_error_naming_the_byte_and_kept_with_the_byte_escaped(tmp_path):
    answer, unused_rss = run_module(tmp_path, "writes_unclean_text.py", params={"case": "not_utf8"})
    envelope = answer["envelope"]
    assert envelope["status"] == "error"
    assert "the probe's result file is not UTF-8 text: byte 0xff at offset " in envelope["reason"]
    assert "(line 1, column " in envelope["reason"]
    assert '{"name": "eth\\xff0"}' in answer["raw_output"]


def test_secrets_of_the_environment_are_redacted_from_raw_output_and_reasons(tmp_path):
    secrets = {"HF_TOKEN": "hf_abcdefghijklmnopqrstuvwxyz", "AWS_SECRET_ACCESS_KEY": "wJalrXUtnFEMI/K7MDENG+bPxRfiCY",
               "DB_PASSWORD": "pw1"}  # shorter than 8: redacted where printed as its variable's value only
    answer, unused_rss = run_module(tmp_path, "prints_env_and_fails.py",
                                    env_extra=dict(secrets, GPUFLEET_PLAIN_SETTING="visible-1"))
    envelope = answer["envelope"]
    assert envelope["status"] == "error" and "exited with code 1" in envelope["reason"]
    everything = json.dumps(answer)
    for value in secrets.values():
        assert value not in everything.replace("DB_PASSWORD=<redacted: $DB_PASSWORD>", "")
    raw = answer["raw_output"]
    assert "HF_TOKEN=<redacted: $HF_TOKEN>" in raw
    assert "'AWS_SECRET_ACCESS_KEY': '<redacted: $AWS_SECRET_ACCESS_KEY>'" in raw
    assert "DB_PASSWORD=<redacted: $DB_PASSWORD>" in raw and "'DB_PASSWORD': '<redacted: $DB_PASSWORD>'" in raw
    assert "and on its own: <redacted: $HF_TOKEN>" in raw
    assert "GPUFLEET_PLAIN_SETTING=visible-1" in raw
    assert "login failed with token <redacted: $HF_TOKEN>" in envelope["reason"]
    assert any("redacted from what the probe wrote: $AWS_SECRET_ACCESS_KEY, $DB_PASSWORD, $HF_TOKEN" in note
               for note in envelope["notes"]), envelope.get("notes")


HUGE_MIB = 200


def test_a_huge_result_file_is_never_loaded_whole_and_its_size_is_said(tmp_path):
    answer, peak_kib = run_module(tmp_path, "writes_a_huge_result.py", params={"mib": HUGE_MIB, "where": "file"})
    envelope = answer["envelope"]
    assert envelope["status"] == "error"
    assert "the probe's result file is 200.0 MiB, more than the 8.0 MiB a result may have" in envelope["reason"]
    assert "its first and last 512 KiB (of 200.0 MiB) are kept beside the result (.raw)" in envelope["reason"]
    raw = answer["raw_output"]
    assert len(raw) < 1024 * 1024 + 200
    assert raw.startswith('{"schema_version": "1"') and raw.endswith('"tail": "the end"}')
    left_out, size = (int(number) for number in re.search(
        r"\n\[gpufleet: (\d+) of the output's (\d+) bytes were left out here\]\n", raw).groups())
    assert size > HUGE_MIB * 1024 * 1024 and left_out == size - 1024 * 1024
    # The module (and its probe, which wrote in 1 MiB pieces) stayed far below the file's size.
    assert peak_kib < 150 * 1024, peak_kib


def test_a_huge_stdout_is_kept_as_its_tail_with_its_size_said(tmp_path):
    answer, peak_kib = run_module(tmp_path, "writes_a_huge_result.py", params={"mib": HUGE_MIB, "where": "stdout"})
    envelope = answer["envelope"]
    assert ("what it printed on stdout is kept beside the result (.raw) (its last 64 KiB of 200.0 MiB)"
            in envelope["reason"])
    assert len(answer["raw_output"]) == 64 * 1024 and answer["raw_output"].endswith('"tail": "the end"}')
    assert peak_kib < 150 * 1024, peak_kib


def _packed(tmp_path, script):
    archive = tmp_path / "gpufleet-probe-fake.zip"
    with zipfile.ZipFile(str(archive), "w") as bundle:
        bundle.write(os.path.join(FAKES, script), "fake.py")
        bundle.write(os.path.join(FAKES, "_args.py"), "_args.py")
    return base64.b64encode(archive.read_bytes()).decode("ascii")


def test_a_probe_that_ends_within_the_first_wait_comes_back_with_its_start(tmp_path):
    """One round trip for a short probe: the start waits (first_wait) and answers with the job's result."""
    job_dir = tmp_path / "jobs"
    args = {"name": "fake", "run_id": "r1", "archive_data": _packed(tmp_path, "noisy_but_good.py"),
            "job_dir": str(job_dir), "params": {"n": 21}, "timeout": 60, "first_wait": 30}
    env = dict(os.environ, PYTHONPATH=COLLECTIONS, GPUFLEET_PROBES_DIR=PROBES_DIR)
    started, unused_peak = _module_answer(tmp_path, "start", MODULE, args, env)
    assert started["started"] is True and started["finished"] is True, started
    assert started["result"]["envelope"]["status"] == "ok"
    assert started["result"]["envelope"]["data"] == {"answer_units": 42}
    assert sorted(os.listdir(str(job_dir))) == []  # returned once, then gone from the host


def test_a_probe_still_running_after_the_first_wait_is_left_to_probe_wait(tmp_path):
    job_dir = tmp_path / "jobs"
    pidfile = tmp_path / "pids"
    args = {"name": "fake", "run_id": "r1", "archive_data": _packed(tmp_path, "hang_with_child.py"),
            "job_dir": str(job_dir), "params": {"pidfile": str(pidfile)}, "timeout": 3, "first_wait": 0.5}
    env = dict(os.environ, PYTHONPATH=COLLECTIONS, GPUFLEET_PROBES_DIR=PROBES_DIR)
    started, unused_peak = _module_answer(tmp_path, "start", MODULE, args, env)
    assert started["started"] is True and started["finished"] is False and "result" not in started, started
    answer, unused_peak = _module_answer(tmp_path, "wait", WAIT_MODULE,
                                         {"job_id": started["job_id"], "job_dir": str(job_dir), "wait": 60}, env)
    assert answer["finished"] is True
    assert answer["result"]["envelope"]["status"] == "timeout", answer["result"]["envelope"]


def test_the_first_probe_of_a_host_finds_its_python_in_the_same_module_run(tmp_path):
    """discover: the start runs Python discovery, starts the probe under the Python it chose, and answers with the
    choice (what find_python would have answered) beside the probe's result: one module run for both."""
    from test_python_discovery import fake_python  # pylint: disable=import-error,import-outside-toplevel
    torch_python = fake_python(tmp_path / "env" / "bin", torch_cuda="12.8")
    job_dir = tmp_path / "jobs"
    args = {"name": "fake", "run_id": "r1", "archive_data": _packed(tmp_path, "noisy_but_good.py"),
            "job_dir": str(job_dir), "params": {"n": 1}, "timeout": 60, "first_wait": 30,
            "discover": {"candidates": [torch_python], "timeout": 30, "proven": None}}
    env = dict(os.environ, PYTHONPATH=COLLECTIONS, GPUFLEET_PROBES_DIR=PROBES_DIR)
    started, unused_peak = _module_answer(tmp_path, "start", MODULE, args, env)
    assert started["finished"] is True, started
    assert started["choice"]["python"] == torch_python and started["choice"]["found"] is True
    assert started["result"]["envelope"]["command"][0] == torch_python  # the probe ran under the Python found
    assert started["result"]["envelope"]["status"] == "ok"


def test_a_probe_runs_with_the_bytecode_cache_and_its_work_directory_is_forgotten_there(tmp_path):
    home = tmp_path / "home"
    home.mkdir()
    answer, unused_rss = run_module(tmp_path, "prints_env_and_fails.py",
                                    env_extra={"HOME": str(home), "XDG_CACHE_HOME": "", "PYTHONDONTWRITEBYTECODE": "1"})
    cache = home / ".cache" / "gpufleet" / "bytecode"
    assert "PYTHONPYCACHEPREFIX=%s" % cache in answer["raw_output"]
    assert "PYTHONDONTWRITEBYTECODE" not in answer["raw_output"]
    jobs_mirror = cache / str(tmp_path / "jobs").lstrip(os.sep)
    assert not [name for unused_dir, unused_dirs, names in os.walk(str(jobs_mirror)) for name in names]
