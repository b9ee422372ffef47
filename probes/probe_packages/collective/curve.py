"""Run one all-reduce curve: start the workers of this host, wait for them, turn their results into the curve."""
from __future__ import annotations

import json
import os
import shutil
import socket
import sys
import tempfile
from dataclasses import dataclass, field
from typing import Any, Dict, List, Mapping, Optional, Tuple

from probe_packages.collective.environment import no_transport_lines_reason, worker_environment
from probe_packages.collective.knee import describe_bytes
from probe_packages.collective.stats import summarize_curve
from probe_packages.collective.transports import kept_lines, transports, via_lines
from probelib.fields import unavailable
from probelib.measure import launcher

# Seconds a worker may spend importing torch and starting CUDA before its rendezvous clock starts.
STARTUP_ALLOWANCE_S = 30.0
WORKER_SCRIPT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "worker.py")


@dataclass
class CurveRequest:
    """One curve on this host: which ranks run here, where they meet, what the workers get."""

    name: str
    plan: Dict[str, Any]
    ranks: List[Tuple[int, int]]  # (global rank, local rank) of the workers started on this host
    master_addr: str
    master_port: int
    rendezvous_timeout_s: float
    curve_timeout_s: float
    env: Dict[str, str] = field(default_factory=dict)        # what defines the curve, e.g. NCCL_P2P_DISABLE=1
    settings: Dict[str, str] = field(default_factory=dict)   # what the probe adds for every curve (debug, interface)
    node_rank: int = 0
    ranks_per_host: int = 0
    hint: str = ""

    @property
    def deadline_s(self) -> float:
        return STARTUP_ALLOWANCE_S + self.rendezvous_timeout_s + self.curve_timeout_s


def library_dir() -> str:
    """The directory that holds probelib and probe_packages (the extracted probe directory); the worker imports from there."""
    return os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def free_port(address: str = "127.0.0.1") -> int:
    """A TCP port nobody listens on now (the kernel's choice); rank 0 binds it a moment later."""
    holder = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    try:
        holder.bind((address, 0))
        return int(holder.getsockname()[1])
    finally:
        holder.close()


def run_curve(request: CurveRequest, environ: Mapping[str, str],
              python: str = sys.executable) -> Tuple[Dict[str, Any], List[Dict[str, str]], List[Optional[Dict[str, Any]]]]:
    """(curve, errors, each local worker's raw result or None)."""
    workdir = tempfile.mkdtemp(prefix="gpufleet-allreduce-")
    try:
        specs = _worker_specs(request, environ, python, workdir)
        try:
            outcome = launcher.run_workers(specs, request.deadline_s)
        except OSError as exc:  # the interpreter or the worker script could not be started
            return _not_started(request, exc)
        results = [launcher.read_result(spec.result_path) for spec in specs]
        outputs = [launcher.read_text(spec.stdout_path) + "\n" + launcher.read_text(spec.stderr_path) for spec in specs]
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
    world = int(request.plan["world_size"])
    points = _points(results)
    curve: Dict[str, Any] = {"name": request.name, "env": dict(request.env)}
    curve.update(summarize_curve(points, world))
    curve.update(_transports(request, environ, outputs[0] if outputs else ""))
    errors: List[Dict[str, str]] = []
    failure = describe_failure(request, outcome, results, outputs)
    if failure is not None:
        what, message = failure
        curve["error"] = message
        errors.append({"curve": request.name, "what": what, "error": message})
    wrong = [point["size_bytes"] for point in curve["sweep"] if not point["verified"]]
    if wrong:
        errors.append({"curve": request.name, "what": "data check",
                       "error": "the all-reduced data differed from the expected sums at %d of %d sizes (%s)"
                                % (len(wrong), len(curve["sweep"]), ", ".join(describe_bytes(size) for size in wrong[:8]))})
    dropped = next((result.get("dropped_sizes_bytes") for result in results if result and result.get("dropped_sizes_bytes")), None)
    if dropped:
        curve["dropped_sizes_bytes"] = dropped
        errors.append({"curve": request.name, "what": "memory",
                       "error": "%d size(s) from %s up were left out: their buffers did not fit in half of a rank's free memory"
                                % (len(dropped), describe_bytes(min(dropped)))})
    return curve, errors, results


def _not_started(request: CurveRequest, exc: OSError) -> Tuple[Dict[str, Any], List[Dict[str, str]], List[Optional[Dict[str, Any]]]]:
    message = "the workers could not be started: %s: %s" % (type(exc).__name__, exc)
    curve = {"name": request.name, "env": dict(request.env), "sweep": [], "error": message,
             "transports": unavailable("no worker ran"), "transport_lines": []}
    return curve, [{"curve": request.name, "what": "start", "error": message}], [None for unused_rank in request.ranks]


def _worker_specs(request: CurveRequest, environ: Mapping[str, str], python: str, workdir: str) -> List[launcher.WorkerSpec]:
    spec_path = os.path.join(workdir, "spec.json")
    with open(spec_path, "w", encoding="utf-8") as handle:
        json.dump({"plan": request.plan, "rendezvous_timeout_s": request.rendezvous_timeout_s,
                   "collective_timeout_s": request.curve_timeout_s, "node_rank": request.node_rank}, handle)
    settings = dict(request.settings)
    settings.update(request.env)
    specs = []
    for global_rank, local_rank in request.ranks:
        rank_variables = {"RANK": global_rank, "WORLD_SIZE": request.plan["world_size"], "LOCAL_RANK": local_rank,
                          "LOCAL_WORLD_SIZE": len(request.ranks), "MASTER_ADDR": request.master_addr,
                          "MASTER_PORT": request.master_port}
        prefix = os.path.join(workdir, "rank%d" % global_rank)
        specs.append(launcher.WorkerSpec(
            rank=global_rank,
            argv=[python, WORKER_SCRIPT, "--library-dir", library_dir(), "--spec", spec_path,
                  "--out", prefix + ".json", "--parent-pid", str(os.getpid())],
            env=worker_environment(environ, settings, rank_variables),
            stdout_path=prefix + ".out", stderr_path=prefix + ".err", result_path=prefix + ".json"))
    return specs


def _points(results: List[Optional[Dict[str, Any]]]) -> List[Dict[str, Any]]:
    """The points of the local worker that got furthest (every rank holds the same, slowest-rank, times)."""
    best: List[Dict[str, Any]] = []
    for result in results:
        points = (result or {}).get("points") or []
        if len(points) > len(best):
            best = points
    return best


def _transports(request: CurveRequest, environ: Mapping[str, str], output: str) -> Dict[str, Any]:
    if request.plan["backend"] != "nccl":
        return {"transports": unavailable("gloo does not choose NCCL transports; it uses TCP sockets"), "transport_lines": []}
    lines = via_lines(output)
    if not lines:
        settings = dict(request.settings)
        settings.update(request.env)
        return {"transports": unavailable(no_transport_lines_reason(environ, settings)), "transport_lines": []}
    return {"transports": transports(lines), "transport_lines": kept_lines(lines)}


def describe_failure(request: CurveRequest, outcome: launcher.LaunchOutcome, results: List[Optional[Dict[str, Any]]],
                     outputs: List[str]) -> Optional[Tuple[str, str]]:
    """(what, message) of a curve that failed, or None when every local worker finished its sweep."""
    finished = [bool(result) and result.get("phase") == "done" for result in results]
    if all(finished):
        return None  # a worker killed in its teardown still measured everything
    ranks = [rank for rank, unused_local in request.ranks]
    failed = [index for index, result in enumerate(results) if result and result.get("error")]
    rendezvous = [index for index in failed if results[index].get("phase") == "rendezvous"]
    if rendezvous:
        index = min(rendezvous, key=lambda position: (bool(results[position].get("unreachable")), position))
        return "rendezvous", _rendezvous_message(request, results[index])
    if failed:
        first = ranks.index(outcome.first_failed_rank) if outcome.first_failed_rank in ranks else failed[0]
        index = first if first in failed else failed[0]
        result = results[index]
        message = "rank %d failed during %s: %s" % (ranks[index], result.get("phase"), result["error"])
        tail = launcher.stderr_tail(outputs[index])
        if result.get("traceback") is None and result.get("what") is None and tail:
            message += " (output: %s)" % tail
        return str(result.get("what") or result.get("phase") or "worker"), message
    measured = len(_points(results))
    if outcome.timed_out:
        phases = ", ".join("rank %d %s" % (rank, (result or {}).get("phase", "not started"))
                           for rank, result in zip(ranks, results))
        return "timeout", ("the workers did not finish within %g s and were killed (%s; %d of %d sizes measured)%s"
                           % (request.deadline_s, phases, measured, len(request.plan["sizes_bytes"]),
                              _tail_words(outputs[0] if outputs else "")))
    crashed = [index for index, code in enumerate(outcome.returncodes) if code != 0 and not finished[index]]
    index = crashed[0] if crashed else 0
    code = outcome.returncodes[index] if outcome.returncodes else None
    phase = (results[index] or {}).get("phase", "start")
    return phase, ("rank %d %s during %s without a result%s" % (
        ranks[index], launcher.describe_exit(code), phase, _tail_words(outputs[index] if outputs else "")))


def _tail_words(output: str) -> str:
    tail = launcher.stderr_tail(output)
    return (": %s" % tail) if tail else ""


def _rendezvous_message(request: CurveRequest, result: Dict[str, Any]) -> str:
    message = str(result["error"])
    missing = result.get("missing_ranks") or []
    if missing and request.ranks_per_host > 0:
        nodes = sorted({rank // request.ranks_per_host for rank in missing})
        message += " on node_rank(s) %s" % ", ".join(str(node) for node in nodes)
    if request.hint and (missing or result.get("unreachable")):
        message += " (%s)" % request.hint
    return message
