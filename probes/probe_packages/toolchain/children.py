"""The two fresh Python processes: one reads the libraries (torch's build, NCCL, libcuda) without initialising CUDA,
the other initialises CUDA and lists its GPUs. Each runs as ``[python, "-c", CONSTANT]`` (no interpolation) in its
own process group, killed on timeout, and prints one JSON line last. Their stderr is never recorded: it can echo
environment values (the dynamic loader names an LD_PRELOAD library it cannot load, for one)."""
from __future__ import annotations

import sys
from typing import Any, Callable, Dict, List, Optional

from probelib.system.child_process import last_json_line, run_child, signal_name

LIBRARIES_CHILD = r'''
import ctypes, glob, json, os, sys
result = {"stage": "start", "error": None}

def emit():
    sys.stdout.write("\n" + json.dumps(result) + "\n")
    sys.stdout.flush()

def error_of(exc):
    return {"type": type(exc).__name__, "message": str(exc)[:1000]}

def mapped(fragment):
    paths = []
    try:
        with open("/proc/self/maps") as handle:
            for line in handle:
                parts = line.split(None, 5)
                if len(parts) == 6:
                    path = parts[5].strip()
                    if os.path.basename(path).startswith(fragment) and path not in paths:
                        paths.append(path)
    except OSError:
        pass
    return paths

def read_version(entry, path, function, key):
    """entry with loaded, and rc and key (what the library's version function answered) or error."""
    try:
        library = ctypes.CDLL(path)
    except OSError as exc:
        entry["error"] = error_of(exc)
        return entry
    entry["loaded"] = True
    value = ctypes.c_int(0)
    try:
        entry["rc"] = int(getattr(library, function)(ctypes.byref(value)))
        entry[key] = int(value.value)
    except BaseException as exc:
        entry["error"] = error_of(exc)
    return entry

def read_libcuda():
    entry = read_version({"loaded": False}, "libcuda.so.1", "cuDriverGetVersion", "version")
    if entry["loaded"]:
        entry["paths"] = mapped("libcuda.so")
    return entry

def read_nccl_library(torch_dir):
    in_use = mapped("libnccl.so")
    site = os.path.dirname(torch_dir)
    candidates = sorted(glob.glob(os.path.join(torch_dir, "lib", "libnccl.so*")))
    candidates += sorted(glob.glob(os.path.join(site, "nvidia", "*", "lib", "libnccl.so*")))
    path = in_use[0] if in_use else (candidates[0] if candidates else None)
    entry = {"mapped": in_use, "candidates": candidates, "path": path, "in_use": bool(in_use), "loaded": False}
    if path is None:
        return entry
    return read_version(entry, path, "ncclGetVersion", "code")

result["libcuda"] = read_libcuda()
result["stage"] = "import"
try:
    import torch
except BaseException as exc:
    result["error"] = error_of(exc)
    emit()
    sys.exit(0)
result["stage"] = "torch"
result["torch_version"] = str(torch.__version__)
result["torch_cuda_version"] = torch.version.cuda
if torch.version.cuda:
    try:
        version = torch.cuda.nccl.version()
        result["nccl_torch"] = {"version": list(version) if isinstance(version, tuple) else version}
    except BaseException as exc:
        result["nccl_torch"] = {"error": error_of(exc)}
    result["nccl_library"] = read_nccl_library(os.path.dirname(os.path.abspath(torch.__file__)))
result["stage"] = "done"
emit()
'''

DEVICES_CHILD = r'''
import json, sys
result = {"stage": "import", "error": None}

def emit():
    sys.stdout.write("\n" + json.dumps(result) + "\n")
    sys.stdout.flush()

try:
    import torch
except BaseException as exc:
    result["error"] = {"type": type(exc).__name__, "message": str(exc)[:1000]}
    emit()
    sys.exit(0)
result["torch_version"] = str(torch.__version__)
result["torch_cuda_version"] = torch.version.cuda
if not torch.version.cuda:
    result["stage"] = "build"
    emit()
    sys.exit(0)
result["stage"] = "count"
try:
    count = torch.cuda.device_count()
    result["device_count"] = count
    result["stage"] = "properties"
    uuids = []
    for index in range(count):
        uuid = getattr(torch.cuda.get_device_properties(index), "uuid", None)
        uuids.append(None if uuid is None else "GPU-%s" % uuid)
    result["uuids"] = uuids
    result["stage"] = "done"
except BaseException as exc:
    result["error"] = {"type": type(exc).__name__, "message": str(exc)[:1000]}
emit()
'''

Runner = Callable[[List[str], float], Dict[str, Any]]


def run_report(code: str, timeout_s: float, python: str = sys.executable, runner: Runner = run_child) -> Dict[str, Any]:
    """{report: the child's JSON object or None, failure: why there is none, or None, wall_s}."""
    run = runner([python, "-c", code], timeout_s)
    report = last_json_line(run["stdout"])
    failure: Optional[str] = None
    if report is None:
        if run["timed_out"]:
            failure = "the fresh Python did not finish within %s s; its process group was killed" % timeout_s
        elif signal_name(run["returncode"]):
            failure = "the fresh Python died of %s before reporting" % signal_name(run["returncode"])
        else:
            failure = "the fresh Python exited with %s without a report" % run["returncode"]
    return {"report": report, "failure": failure, "wall_s": run.get("wall_s")}


def torch_state(run: Dict[str, Any], python: str = sys.executable) -> Dict[str, Any]:
    """{torch_version, torch_cuda_version, problem, absent}: problem says why torch's CUDA side cannot be used;
    absent is true when that is because torch is missing or built without CUDA (not an error)."""
    report = run.get("report")
    if report is None:
        return {"torch_version": None, "torch_cuda_version": None, "problem": run.get("failure"), "absent": False}
    state = {"torch_version": report.get("torch_version"), "torch_cuda_version": report.get("torch_cuda_version"),
             "problem": None, "absent": False}
    error = report.get("error")
    if report.get("stage") == "import" and error:
        state.update(problem="torch is not importable by %s (%s: %s)" % (python, error.get("type"), error.get("message")),
                     absent=True)
    elif not state["torch_cuda_version"]:
        state.update(problem="torch built without CUDA (torch %s, torch.version.cuda is None)" % state["torch_version"],
                     absent=True)
    return state


def libcuda_state(report: Optional[Dict[str, Any]], failure: Optional[str]) -> Dict[str, Any]:
    """{code, path, problem} from the libraries child's libcuda entry."""
    if report is None:
        return {"code": None, "path": None, "problem": failure or "no report"}
    entry = report.get("libcuda") or {}
    if not entry.get("loaded"):
        error = entry.get("error") or {}
        return {"code": None, "path": None,
                "problem": "not loadable (%s: %s): no NVIDIA driver's libcuda on the loader path" % (
                    error.get("type", "OSError"), error.get("message", ""))}
    paths = entry.get("paths") or []
    path = paths[0] if paths else None
    if entry.get("rc") != 0 or not isinstance(entry.get("version"), int):
        error = entry.get("error")
        why = "%s: %s" % (error.get("type"), error.get("message")) if error else "cuDriverGetVersion returned %r" % (
            entry.get("rc"),)
        return {"code": None, "path": path, "problem": why}
    return {"code": entry["version"], "path": path, "problem": None}


def cuda_devices_state(run: Dict[str, Any], torch: Dict[str, Any]) -> Dict[str, Any]:
    """The devices child's answer for nvml_cuda_agree: {problem, error, stage, device_count, uuids}."""
    report = run.get("report")
    if report is None:
        return {"problem": run.get("failure"), "error": None, "stage": None, "device_count": None, "uuids": None}
    if report.get("stage") == "import" and report.get("error"):
        error = report["error"]
        return {"problem": "torch is not importable (%s: %s)" % (error.get("type"), error.get("message")), "error": None,
                "stage": "import", "device_count": None, "uuids": None}
    if report.get("stage") == "build":
        return {"problem": torch.get("problem") or "torch built without CUDA", "error": None, "stage": "build",
                "device_count": None, "uuids": None}
    return {"problem": None, "error": report.get("error"), "stage": report.get("stage"),
            "device_count": report.get("device_count"), "uuids": report.get("uuids")}
