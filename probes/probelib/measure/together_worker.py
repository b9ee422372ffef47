"""One worker of a together phase, run by probelib.measure.together as its own process:

    python together_worker.py --probes-dir DIR --job JOB.json --out RESULT.json --parent-pid PID

DIR holds probelib and probe_packages. JOB.json names the task (``probe_packages.<package>.<module>:<function>``), its
arguments, this worker and its device, and the barrier's directory. RESULT.json gets ``{"result": ...}`` or ``{"error": ...}``, with
``start_lag_ms`` and ``duration_s``; it is written once, atomically, at the end.
"""
from __future__ import annotations

import argparse
import importlib
import json
import os
import sys
import time
import traceback
from typing import Any, Callable, Dict, List, Optional

POLL_S = 0.0005
ERROR_CHARS = 2000


def main(argv: Optional[List[str]] = None) -> int:
    parser = argparse.ArgumentParser(description="one worker of a gpufleet together phase")
    parser.add_argument("--probes-dir", required=True, help="the directory that holds probelib and probe_packages")
    parser.add_argument("--job", required=True, help="this worker's JSON job")
    parser.add_argument("--out", required=True, help="where this worker writes its JSON result")
    parser.add_argument("--parent-pid", type=int, default=0, help="die when this process (the probe) is gone")
    args = parser.parse_args(argv)
    here = os.path.dirname(os.path.abspath(__file__))
    sys.path[:] = [entry for entry in sys.path if os.path.abspath(entry or ".") != here]  # no sibling shadows a module
    sys.path.insert(0, os.path.abspath(args.probes_dir))
    if args.parent_pid:
        from probelib.measure.parent_death import die_with_parent  # pylint: disable=import-outside-toplevel
        die_with_parent(args.parent_pid)
    with open(args.job, encoding="utf-8") as handle:
        job = json.load(handle)
    gate = StartLine(job["barrier_dir"], int(job["worker"]["worker"]), float(job["barrier_limit_s"]))
    began = time.monotonic()
    written: Dict[str, Any] = {}
    try:
        function = load_task(job["task"])
        written["result"] = function(job["device"], job["worker"], job["args"], gate.start)
    except BaseException as exc:  # pylint: disable=broad-except
        written["error"] = ("%s: %s" % (type(exc).__name__, str(exc).strip() or type(exc).__name__))[:ERROR_CHARS]
        written["traceback"] = traceback.format_exc(limit=8)[-ERROR_CHARS:]
    if not gate.passed:
        gate.start()  # a worker that failed before its start still lets the others go
    written["start_lag_ms"] = gate.lag_ms
    written["duration_s"] = round(time.monotonic() - began, 3)
    write_atomically(args.out, written)
    return 0 if "result" in written else 1


def load_task(task: str) -> Callable[..., Dict[str, Any]]:
    """The function a task names: module:function, the module importable from the probes directory."""
    module_name, unused_colon, function_name = task.partition(":")
    if not module_name or not function_name:
        raise ValueError("a task is <module>:<function>, not %r" % task)
    return getattr(importlib.import_module(module_name), function_name)


class StartLine:
    """This worker's side of the barrier: say it is ready, wait for the release, measure the lag."""

    def __init__(self, directory: str, worker: int, limit_s: float) -> None:
        self.directory = directory
        self.worker = worker
        self.limit_s = limit_s
        self.passed = False
        self.lag_ms: Optional[float] = None

    def start(self) -> Optional[float]:
        if self.passed:
            return self.lag_ms
        self.passed = True
        ready = os.path.join(self.directory, "ready-%d" % self.worker)
        with open(ready + ".tmp", "w", encoding="utf-8") as handle:
            handle.write(str(os.getpid()))
        os.rename(ready + ".tmp", ready)
        go = os.path.join(self.directory, "go")
        deadline = time.monotonic() + self.limit_s
        while time.monotonic() < deadline:
            try:
                with open(go, encoding="utf-8") as handle:
                    released = float(handle.read())
            except (OSError, ValueError):
                time.sleep(POLL_S)
                continue
            self.lag_ms = round((time.monotonic() - released) * 1000.0, 3)
            return self.lag_ms
        return None


def write_atomically(path: str, value: Dict[str, Any]) -> None:
    temporary = path + ".tmp"
    with open(temporary, "w", encoding="utf-8") as handle:
        json.dump(value, handle, default=str)
    os.rename(temporary, path)


if __name__ == "__main__":
    sys.exit(main())
