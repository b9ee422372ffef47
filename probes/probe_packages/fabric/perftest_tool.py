"""ib_write_bw (perftest) on this host: where it is, its version, and whether it was built with CUDA (GPUDirect RDMA).

perftest prints ``Version: <v>`` for ``--version`` and exits 1 (VERSION_EXIT); its ``--help`` lists ``--use_cuda=<cuda
device id>`` only when it was built with CUDA (HAVE_CUDA in src/perftest_parameters.c). Debian's perftest is built
without CUDA, so it measures host memory only.
"""
from __future__ import annotations

import re
from typing import Any, Callable, Dict, List

from probelib.fields import unavailable

TOOL = "ib_write_bw"
NOT_INSTALLED = "ib_write_bw (perftest) is not installed: apt install perftest"
QUERY_TIMEOUT_S = 10.0
CUDA_OPTION = "--use_cuda"
# Options every ib_write_bw --help lists: the text is a help text, so a missing --use_cuda means "built without CUDA".
HELP_MARKERS = ("--ib-dev", "--report_gbits")
_VERSION = re.compile(r"^\s*Version:\s*(\S+)\s*$", re.MULTILINE)

Runner = Callable[[List[str], float], Dict[str, Any]]


def describe_tool(which: Callable[[str], Any], run: Runner) -> Dict[str, Any]:
    """{"path", "version", "cuda_capable"} of the ib_write_bw on PATH, or unavailable when there is none."""
    path = which(TOOL)
    if not path:
        return unavailable(NOT_INSTALLED)
    return {"path": path, "version": _version(path, run), "cuda_capable": _cuda_capable(path, run)}


def _version(path: str, run: Runner) -> Any:
    answer = _ask(path, "--version", run)
    if "unavailable" in answer:
        return answer
    match = _VERSION.search(answer["stdout"])
    if match:
        return match.group(1)
    return unavailable("%s --version printed no 'Version: ' line (exit status %s): %s"
                       % (path, answer["returncode"], _excerpt(answer)))


def _cuda_capable(path: str, run: Runner) -> Any:
    answer = _ask(path, "--help", run)
    if "unavailable" in answer:
        return answer
    text = answer["stdout"] + answer["stderr"]
    if CUDA_OPTION in text:
        return True
    if all(marker in text for marker in HELP_MARKERS):
        return False
    return unavailable("%s --help printed no usage text (exit status %s): %s" % (path, answer["returncode"], _excerpt(answer)))


def _ask(path: str, option: str, run: Runner) -> Dict[str, Any]:
    try:
        answer = run([path, option], QUERY_TIMEOUT_S)
    except OSError as exc:
        return unavailable("%s %s could not be started: %s" % (path, option, exc.strerror or exc))
    if answer.get("timed_out"):
        return unavailable("%s %s did not answer within %g s (killed)" % (path, option, QUERY_TIMEOUT_S))
    return answer


def _excerpt(answer: Dict[str, Any]) -> str:
    text = " ".join((answer.get("stdout", "") + " " + answer.get("stderr", "")).split())
    return text[:200] or "no output"
