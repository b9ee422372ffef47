"""A fresh Python process run as a constant argv list (no shell) in its own process group, killed with the group on
timeout; its last JSON line is its answer (the health probe's CUDA init child, the toolchain probe's children)."""
from __future__ import annotations

import json
import os
import signal
import subprocess
import time
from typing import Any, Dict, List, Optional


def last_json_line(stdout: str) -> Optional[Dict[str, Any]]:
    for line in reversed(stdout.splitlines()):
        line = line.strip()
        if not line.startswith("{"):
            continue
        try:
            value = json.loads(line)
        except ValueError:
            continue
        if isinstance(value, dict):
            return value
    return None


def run_child(argv: List[str], timeout_s: float) -> Dict[str, Any]:
    started = time.monotonic()
    process = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, stdin=subprocess.DEVNULL,
                               shell=False, start_new_session=True)
    timed_out = False
    try:
        stdout, stderr = process.communicate(timeout=timeout_s)
    except subprocess.TimeoutExpired:
        timed_out = True
        try:
            os.killpg(process.pid, signal.SIGKILL)
        except OSError:
            pass
        stdout, stderr = process.communicate()
    return {
        "returncode": process.returncode,
        "timed_out": timed_out,
        "stdout": stdout.decode("utf-8", "replace"),
        "stderr": stderr.decode("utf-8", "replace"),
        "wall_s": round(time.monotonic() - started, 3),
    }


def signal_name(returncode: Optional[int]) -> Optional[str]:
    if returncode is None or returncode >= 0:
        return None
    try:
        return signal.Signals(-returncode).name
    except ValueError:
        return "signal %d" % -returncode
