import sys

from probe_packages.health.cuda_init import CUDA_INIT_CHILD, interpret
from probelib.system.child_process import last_json_line, run_child, signal_name

PYTHON = "/usr/bin/python3"


def _run(stdout="", stderr="", returncode=0, timed_out=False):
    return {"stdout": stdout, "stderr": stderr, "returncode": returncode, "timed_out": timed_out, "wall_s": 1.0}


def test_last_json_line_skips_noise():
    stdout = 'warning: something\n{"not": "this"}\n{broken\n{"ok": true, "stage": "done"}\ntrailing text\n'
    assert last_json_line(stdout) == {"ok": True, "stage": "done"}
    assert last_json_line("no json at all") is None


def test_missing_torch_is_unavailable():
    report = '{"ok": false, "stage": "import", "error": {"type": "ModuleNotFoundError", ' \
             '"message": "No module named \'torch\'"}}'
    result = interpret(_run(stdout=report), PYTHON, 120)
    assert result == {"unavailable": "torch is not importable by /usr/bin/python3: ModuleNotFoundError: "
                                     "No module named 'torch'"}


def test_cpu_only_torch_is_recorded_with_a_reason():
    report = ('{"ok": false, "stage": "build", "torch_version": "2.5.1+cpu", "torch_cuda_version": null, '
              '"nccl_version": null, "cudnn_version": null, "duration_s": 1.2, '
              '"error": {"type": "NoCudaBuild", "message": "this torch 2.5.1+cpu is built without CUDA"}}')
    result = interpret(_run(stdout=report), PYTHON, 120)
    assert result["ok"] is False
    assert result["stage"] == "build"
    assert result["torch_version"] == "2.5.1+cpu"
    assert result["torch_cuda_version"] == {"unavailable": "this torch is built without CUDA"}
    assert "CPU-only build" in result["reason"]


def test_success_report():
    report = ('{"ok": true, "stage": "done", "torch_version": "2.11.0+cu130", "torch_cuda_version": "13.0", '
              '"nccl_version": "2.28.9", "cudnn_version": 91900, "device_count": 2, "duration_s": 4.8, '
              '"error": null, "devices": [{"index": 0, "ok": true, "error": null, "duration_s": 0.2}, '
              '{"index": 1, "ok": true, "error": null, "duration_s": 0.1}]}')
    result = interpret(_run(stdout="noise\n" + report + "\n"), PYTHON, 120)
    assert result["ok"] is True
    assert result["device_count"] == 2
    assert result["nccl_version"] == "2.28.9"
    assert result["reason"] == ""
    assert result["signal"] is None


def test_crash_records_signal_and_stderr_tail():
    result = interpret(_run(stderr="x" * 5000 + "Segmentation fault", returncode=-11), PYTHON, 120)
    assert result["ok"] is False
    assert result["signal"] == "SIGSEGV"
    assert result["stderr_tail"].endswith("Segmentation fault")
    assert len(result["stderr_tail"]) == 2000
    assert "SIGSEGV" in result["reason"]
    assert result["device_count"]["unavailable"] == result["reason"]


def test_cuda_init_failure_reason_names_the_error():
    report = ('{"ok": false, "stage": "init", "torch_version": "2.11.0", "torch_cuda_version": "13.0", '
              '"error": {"type": "RuntimeError", "message": "CUDA unknown error - this may be due to an '
              'incorrectly set up environment"}}')
    result = interpret(_run(stdout=report), PYTHON, 120)
    assert result["ok"] is False
    assert result["reason"].startswith("CUDA failed at stage init: RuntimeError: CUDA unknown error")
    assert result["devices"] == {"unavailable": "CUDA did not initialise, so no device was tried"}


def test_signal_names():
    assert signal_name(0) is None
    assert signal_name(1) is None
    assert signal_name(-9) == "SIGKILL"


def test_timeout_kills_the_process_group():
    run = run_child([sys.executable, "-c", "import time; time.sleep(30)"], 0.5)
    assert run["timed_out"] is True
    assert run["returncode"] == -9
    assert run["wall_s"] < 10
    result = interpret(run, sys.executable, 0.5)
    assert result["timed_out"] is True and result["ok"] is False
    assert "did not finish within 0.5 s" in result["reason"]


def test_child_code_runs_and_reports_one_json_line():
    run = run_child([sys.executable, "-c", CUDA_INIT_CHILD], 60)
    report = last_json_line(run["stdout"])
    assert report is not None
    assert report["stage"] in ("import", "build", "init", "devices", "done")
    assert isinstance(report["duration_s"], float)
    if report["stage"] == "import":
        assert report["error"]["type"] in ("ModuleNotFoundError", "ImportError")
