"""The fresh Pythons of the toolchain probe: their reports interpreted, and both run for real on this machine."""
import os
import sys

from probe_packages.toolchain.children import (DEVICES_CHILD, LIBRARIES_CHILD, cuda_devices_state, libcuda_state, run_report,
                                               torch_state)

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", ".."))
VENV_PYTHON = os.path.join(ROOT, ".venv-test", "bin", "python")
PYTHON = VENV_PYTHON if os.path.exists(VENV_PYTHON) else sys.executable


def fake_runner(stdout="", returncode=0, timed_out=False):
    def runner(argv, timeout_s):
        assert argv[1] == "-c" and timeout_s == 5
        return {"stdout": stdout, "stderr": "ERROR: ld.so: object '/secret.so' from LD_PRELOAD cannot be preloaded",
                "returncode": returncode, "timed_out": timed_out, "wall_s": 0.1}
    return runner


def test_failures_without_a_report_say_why_and_never_keep_stderr():
    run = run_report("code", 5, runner=fake_runner(timed_out=True, returncode=-9))
    assert run == {"report": None, "failure": "the fresh Python did not finish within 5 s; its process group was killed",
                   "wall_s": 0.1}
    assert run_report("code", 5, runner=fake_runner(returncode=-11))["failure"] == \
        "the fresh Python died of SIGSEGV before reporting"
    assert run_report("code", 5, runner=fake_runner(returncode=1))["failure"] == \
        "the fresh Python exited with 1 without a report"
    run = run_report("code", 5, runner=fake_runner(stdout='noise\n{"stage": "done", "uuids": []}\n'))
    assert run["report"] == {"stage": "done", "uuids": []} and run["failure"] is None
    assert "secret" not in repr(run)


def test_torch_states():
    failed = {"report": None, "failure": "the fresh Python died of SIGSEGV before reporting"}
    assert torch_state(failed) == {"torch_version": None, "torch_cuda_version": None,
                                   "problem": "the fresh Python died of SIGSEGV before reporting", "absent": False}
    missing = {"report": {"stage": "import", "error": {"type": "ModuleNotFoundError", "message": "No module named 'torch'"}}}
    state = torch_state(missing, python="/usr/bin/python3")
    assert state["absent"] and state["problem"] == ("torch is not importable by /usr/bin/python3 (ModuleNotFoundError: "
                                                    "No module named 'torch')")
    cpu = {"report": {"stage": "done", "error": None, "torch_version": "2.13.0+cpu", "torch_cuda_version": None}}
    assert torch_state(cpu)["problem"] == "torch built without CUDA (torch 2.13.0+cpu, torch.version.cuda is None)"
    gpu = {"report": {"stage": "done", "error": None, "torch_version": "2.11.0+cu130", "torch_cuda_version": "13.0"}}
    assert torch_state(gpu) == {"torch_version": "2.11.0+cu130", "torch_cuda_version": "13.0", "problem": None,
                                "absent": False}


def test_libcuda_states():
    assert libcuda_state(None, "timed out")["problem"] == "timed out"
    report = {"libcuda": {"loaded": True, "rc": 0, "version": 13000, "paths": ["/usr/lib/libcuda.so.580.65.06"]}}
    assert libcuda_state(report, None) == {"code": 13000, "path": "/usr/lib/libcuda.so.580.65.06", "problem": None}
    report = {"libcuda": {"loaded": True, "rc": 999, "version": 0, "paths": []}}
    assert libcuda_state(report, None)["problem"] == "cuDriverGetVersion returned 999"
    report = {"libcuda": {"loaded": False, "error": {"type": "OSError", "message": "libcuda.so.1: cannot open"}}}
    assert libcuda_state(report, None)["problem"].startswith("not loadable (OSError: libcuda.so.1: cannot open)")


def test_cuda_device_states():
    torch = {"problem": "torch built without CUDA (torch 2.13.0+cpu, torch.version.cuda is None)"}
    assert cuda_devices_state({"report": {"stage": "build"}}, torch)["problem"] == torch["problem"]
    done = {"report": {"stage": "done", "error": None, "device_count": 2, "uuids": ["GPU-a", "GPU-b"]}}
    assert cuda_devices_state(done, {}) == {"problem": None, "error": None, "stage": "done", "device_count": 2,
                                            "uuids": ["GPU-a", "GPU-b"]}
    assert cuda_devices_state({"report": None, "failure": "hung"}, {})["problem"] == "hung"


def test_both_children_run_for_real_here():
    libraries = run_report(LIBRARIES_CHILD, 120, python=PYTHON)
    report = libraries["report"]
    assert libraries["failure"] is None and report["stage"] == "done" and report["error"] is None
    assert isinstance(report["torch_version"], str) and "loaded" in report["libcuda"]
    # a loaded libcuda has its mapped paths, an unloadable one its error only (read_version is shared with NCCL's read)
    assert ("paths" in report["libcuda"]) is report["libcuda"]["loaded"]
    devices = run_report(DEVICES_CHILD, 120, python=PYTHON)
    if report["torch_cuda_version"] is None:       # this CPU-only machine
        assert "nccl_torch" not in report and devices["report"]["stage"] == "build"
    else:
        assert "nccl_torch" in report and devices["report"]["stage"] in ("done", "properties", "count")
