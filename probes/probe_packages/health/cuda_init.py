"""CUDA initialisation in a fresh Python process, so a crash or hang there cannot take the probe down."""
from __future__ import annotations

import sys
from typing import Any, Dict

from probelib.fields import unavailable
from probelib.nvml.context import ReadContext
from probelib.system.child_process import last_json_line, run_child, signal_name

STDERR_TAIL_CHARS = 2000

# Run as `python -c CUDA_INIT_CHILD`; it prints one JSON line as its last line of output.
CUDA_INIT_CHILD = r'''
import json, sys, time
started = time.monotonic()
result = {"ok": False, "python": sys.executable, "stage": "import", "error": None}

def emit():
    result["duration_s"] = round(time.monotonic() - started, 3)
    sys.stdout.write("\n" + json.dumps(result) + "\n")
    sys.stdout.flush()

def error_of(exc):
    return {"type": type(exc).__name__, "message": str(exc)[:2000]}

try:
    import torch
except BaseException as exc:
    result["error"] = error_of(exc)
    emit()
    sys.exit(0)
result["torch_version"] = str(torch.__version__)
result["torch_cuda_version"] = torch.version.cuda
try:
    result["cudnn_version"] = torch.backends.cudnn.version()
except BaseException as exc:
    result["cudnn_version"] = None
try:
    nccl = torch.cuda.nccl.version()
    result["nccl_version"] = ".".join(str(part) for part in nccl) if isinstance(nccl, tuple) else str(nccl)
except BaseException as exc:
    result["nccl_version"] = None
if not torch.version.cuda:
    result["stage"] = "build"
    result["error"] = {"type": "NoCudaBuild", "message": "this torch %s is built without CUDA" % torch.__version__}
    emit()
    sys.exit(0)
result["stage"] = "init"
try:
    torch.cuda.init()
    count = torch.cuda.device_count()
    result["device_count"] = count
    result["stage"] = "devices"
    devices = []
    for index in range(count):
        device = {"index": index, "ok": False, "error": None}
        device_started = time.monotonic()
        try:
            props = torch.cuda.get_device_properties(index)
            device["name"] = props.name
            device["total_memory_mib"] = int(props.total_memory) // (1 << 20)
            device["compute_capability"] = "%d.%d" % (props.major, props.minor)
            uuid = getattr(props, "uuid", None)
            device["uuid"] = ("GPU-%s" % uuid) if uuid is not None else None
            elements = (1 << 20) // 4
            host = torch.randint(0, 1 << 20, (elements,), dtype=torch.int32)
            on_device = host.to("cuda:%d" % index)
            computed = on_device * 3 + 1
            torch.cuda.synchronize(index)
            device["ok"] = bool(torch.equal(computed.cpu(), host * 3 + 1))
            if not device["ok"]:
                device["error"] = {"type": "DataMismatch", "message": "1 MiB written and read back differs"}
        except BaseException as exc:
            device["error"] = error_of(exc)
        device["duration_s"] = round(time.monotonic() - device_started, 3)
        devices.append(device)
    result["devices"] = devices
    result["ok"] = count > 0 and all(device["ok"] for device in devices)
    result["stage"] = "done"
    if count == 0:
        result["error"] = {"type": "NoDevice", "message": "torch.cuda.device_count() is 0"}
except BaseException as exc:
    result["error"] = error_of(exc)
emit()
'''


def interpret(run: Dict[str, Any], python: str, timeout_s: float) -> Any:
    """Turn the child's exit, output and JSON line into the cuda_init section."""
    report = last_json_line(run["stdout"])
    stderr_tail = run["stderr"][-STDERR_TAIL_CHARS:]
    if report is not None and report.get("stage") == "import" and report.get("error"):
        error = report["error"]
        return unavailable("torch is not importable by %s: %s: %s" % (python, error.get("type"), error.get("message")))
    result: Dict[str, Any] = {
        "python": python,
        "timeout_s": timeout_s,
        "timed_out": run["timed_out"],
        "returncode": run["returncode"],
        "signal": signal_name(run["returncode"]),
        "wall_s": run["wall_s"],
        "stderr_tail": stderr_tail,
    }
    if report is None:
        if run["timed_out"]:
            why = "CUDA init did not finish within %s s; the process group was killed" % timeout_s
        elif result["signal"]:
            why = "the CUDA init process died of %s before reporting" % result["signal"]
        else:
            why = "the CUDA init process exited with %s without a JSON report" % run["returncode"]
        result.update(ok=False, stage="unknown", reason=why, error={"type": "NoReport", "message": why})
        for key in ("device_count", "devices", "duration_s", "torch_version", "torch_cuda_version", "nccl_version",
                    "cudnn_version"):
            result[key] = unavailable(why)
        return result
    result.update(
        ok=bool(report.get("ok")) and run["returncode"] == 0,
        stage=str(report.get("stage", "unknown")),
        error=report.get("error"),
        duration_s=report.get("duration_s", unavailable("the child did not time itself")),
        torch_version=_known(report.get("torch_version"), "torch did not report its version"),
        torch_cuda_version=_known(report.get("torch_cuda_version"), "this torch is built without CUDA"),
        nccl_version=_known(report.get("nccl_version"), "torch.cuda.nccl.version() failed (no NCCL in this build?)"),
        cudnn_version=_known(report.get("cudnn_version"), "torch reports no cuDNN"),
        device_count=_known(report.get("device_count"), "CUDA did not initialise, so no device count"),
        devices=_known(report.get("devices"), "CUDA did not initialise, so no device was tried"),
    )
    result["reason"] = _reason(result)
    return result


def _known(value: Any, reason: str) -> Any:
    return unavailable(reason) if value is None else value


def _reason(result: Dict[str, Any]) -> str:
    if result["ok"]:
        return ""
    error = result.get("error") or {}
    if result["stage"] == "build":
        return "torch %s is a CPU-only build: install a CUDA build of torch" % result["torch_version"]
    if error:
        return "CUDA failed at stage %s: %s: %s" % (result["stage"], error.get("type"), error.get("message"))
    devices = result["devices"] if isinstance(result["devices"], list) else []
    failed = [device["index"] for device in devices if not device.get("ok")]
    if failed:
        return "the 1 MiB write/read check failed on CUDA device(s) %s" % ", ".join(map(str, failed))
    return "the CUDA init process exited with %s" % result["returncode"]


def collect_cuda_init(context: ReadContext, python: str = sys.executable) -> Any:
    if not context.params.get("cuda_init", True):
        return unavailable("skipped: parameter cuda_init is false")
    timeout_s = float(context.params.get("cuda_init_timeout_s", 120))
    run = run_child([python, "-c", CUDA_INIT_CHILD], timeout_s)
    return interpret(run, python, timeout_s)
