"""The part every probe shares: command line, parameters, the envelope, an atomic write.

A probe module calls ``main(...)`` with a ``collect`` function; its parameters, their defaults and ranges are its
spec (params.json, read and checked by probelib/params.py). ``collect(params)`` returns a
``ProbeResult``; whatever it raises becomes an ``error`` envelope, so the probe always writes JSON (a ``ProbeError``'s
message is the reason as it stands).
Runs on Python >= 3.9 with the standard library only.
"""
from __future__ import annotations

import argparse
import datetime
import importlib
import json
import os
import platform
import socket
import sys
import tempfile
import time
import traceback
from dataclasses import dataclass, field
from typing import Any, Callable, Dict, Mapping, Optional, Sequence

from probelib import params as probe_params
from probelib.params import ParameterError

from probelib.statuses import STATUSES

SCHEMA_VERSION = "1"
# The engine's value for this start of the probe (plugins/module_utils/probe_envelope.py NONCE_VARIABLE, pinned by a
# test): written back into the envelope, it binds the result to this host's start in this run (issue 45).
NONCE_VARIABLE = "GPUFLEET_PROBE_NONCE"


@dataclass
class ProbeResult:
    """What a probe's collect function returns.

    status: ok (all sections ran), partial (a section failed; see data.errors),
    unavailable (what the probe measures is absent on this host), error.
    """

    status: str
    data: Dict[str, Any]
    reason: str = ""
    environment: Dict[str, Any] = field(default_factory=dict)


class ProbeError(Exception):
    """A failure the probe has already put in words a person can act on: the message is the error envelope's
    reason as it stands, ``data`` its data (never a measurement)."""

    def __init__(self, reason: str, data: Optional[Dict[str, Any]] = None) -> None:
        super().__init__(reason)
        self.data: Dict[str, Any] = dict(data or {})


def read_params(path: Optional[str], spec: Mapping[str, Any], text: Optional[str] = None) -> Dict[str, Any]:
    """Merge the JSON parameters (the file at path, or text: the same JSON given on the command line) over the spec's
    defaults; refuse unknown names and values the spec does not allow."""
    params = probe_params.defaults(spec)
    if text is not None:
        try:
            given = json.loads(text)
        except ValueError as exc:
            raise ParameterError("--params-json is not JSON: %s" % exc) from exc
        where = "--params-json"
    elif path:
        with open(path, encoding="utf-8") as handle:
            given = json.load(handle)
        where = "the parameter file"
    else:
        return params
    if not isinstance(given, dict):
        raise ParameterError("%s must hold a JSON object, not %s" % (where, type(given).__name__))
    problems = probe_params.problems(spec, given)
    if problems:
        raise ParameterError("; ".join(problems))
    params.update(given)
    return params


def parameters_help(spec: Mapping[str, Any]) -> str:
    """One line per parameter of the spec: name, type and range, default, what it does."""
    known = probe_params.parameters(spec)
    if not known:
        return "parameters: none"
    lines = ["parameters (--params / --params-json; the spec is params.json):"]
    for name, schema in known.items():
        lines.append("  %s (%s; default %s): %s" % (name, probe_params.describe(schema), json.dumps(schema["default"]),
                                                    schema.get("description", "")))
    return "\n".join(lines)


class _HelpFormatter(argparse.HelpFormatter):
    """Wraps the description as usual; keeps the parameter list's lines as they are."""

    def _fill_text(self, text: str, width: int, indent: str) -> str:
        if "\n" in text:
            return "\n".join(indent + line for line in text.splitlines())
        return super()._fill_text(text, width, indent)


def base_environment() -> Dict[str, Any]:
    """Versions that matter for every probe (never environment variables)."""
    return {
        "python_version": platform.python_version(),
        "python_executable": sys.executable,
        "probe_pid": os.getpid(),
    }


def write_json_atomically(path: str, document: Dict[str, Any]) -> None:
    directory = os.path.dirname(os.path.abspath(path))
    fd, tmp_path = tempfile.mkstemp(prefix=".tmp-", suffix=".json", dir=directory)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            json.dump(document, handle, indent=2, sort_keys=True, allow_nan=False, default=str)
            handle.write("\n")
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp_path, path)
    except BaseException:
        try:
            os.unlink(tmp_path)
        except OSError:
            pass
        raise


def _now_iso() -> str:
    return datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")


def build_envelope(probe: str, result: ProbeResult, started: str, duration_s: float) -> Dict[str, Any]:
    if result.status not in STATUSES:
        raise ValueError("probe returned an unknown status %r" % result.status)
    environment = base_environment()
    environment.update(result.environment)
    envelope = {
        "schema_version": SCHEMA_VERSION,
        "probe": probe,
        "host": socket.gethostname(),
        "status": result.status,
        "started": started,
        "duration_s": round(duration_s, 3),
        "command": list(sys.argv),
        "environment": environment,
        "reason": result.reason,
        "data": result.data,
    }
    nonce = os.environ.get(NONCE_VARIABLE)
    if nonce:
        envelope["nonce"] = nonce
    return envelope


def missing_requirement(modules: Sequence[str]) -> Optional[str]:
    """Why the first of ``modules`` that cannot be imported is missing, or None when all import."""
    for module in modules:
        try:
            importlib.import_module(module)
        except Exception as exc:  # a broken install raises more than ImportError
            return ("%s is not importable by %s (%s: %s); set gpufleet_python to a Python that has it"
                    % (module, sys.executable, type(exc).__name__, exc))
    return None


def _no_gpu_first(missing: str) -> str:
    """On a host without NVIDIA GPUs, that comes before a missing module: no Python would give the probe a GPU."""
    from probelib.measure.host_gpus import nothing_to_measure

    nothing = nothing_to_measure()
    return "%s; besides, %s" % (nothing, missing) if nothing else missing


def watched(collect: Callable[[Dict[str, Any]], ProbeResult], params: Dict[str, Any]) -> ProbeResult:
    """collect(params) while the GPUs' other compute processes are listed (probelib/measure/foreign_processes.py); the
    record goes into the result's data whatever collect returns or raises."""
    from probelib.measure import foreign_processes

    watch = foreign_processes.watch()
    try:
        result = collect(params)
    except ProbeError as exc:
        exc.data[foreign_processes.RECORD_KEY] = watch.finish()
        raise
    except BaseException:
        watch.finish()
        raise
    record = watch.finish()
    if isinstance(result.data, dict):
        result.data[foreign_processes.RECORD_KEY] = record
    return result


def main(probe: str, description: str, collect: Callable[[Dict[str, Any]], ProbeResult],
         argv: Optional[list] = None, requires: Sequence[str] = (), spec: Optional[Mapping[str, Any]] = None,
         measures_gpus: bool = False) -> int:
    """Parse the command line, run ``collect`` and write its envelope; ``requires`` are modules that must import;
    ``spec`` the parameter spec (default: the probe's params.json, probelib/params.py says where it is found);
    ``measures_gpus``: a probe whose numbers another job on the GPU distorts, whose data then records the GPUs' other
    compute processes before and during the measurement (foreign_gpu_processes)."""
    spec_problem = ""
    if spec is None:
        try:
            spec = probe_params.load_spec(probe)
        except (OSError, ValueError) as exc:
            spec, spec_problem = {}, str(exc)
    parser = argparse.ArgumentParser(prog="%s.py" % probe, description=description, formatter_class=_HelpFormatter,
                                     epilog=spec_problem or parameters_help(spec))
    given = parser.add_mutually_exclusive_group()
    given.add_argument("--params", metavar="FILE", help="JSON object of parameters (the list below)")
    given.add_argument("--params-json", metavar="JSON", help="the same JSON object given inline, as a dossier's command shows it")
    parser.add_argument("--out", metavar="FILE", help="write the result envelope here (default: standard output)")
    args = parser.parse_args(argv)

    started = _now_iso()
    clock = time.monotonic()
    try:
        if spec_problem:
            raise ParameterError(spec_problem)
        params = read_params(args.params, spec, args.params_json)
        missing = missing_requirement(requires)
        if missing and measures_gpus:
            missing = _no_gpu_first(missing)
        if missing:
            result = ProbeResult("unavailable", {}, missing)
        else:
            result = watched(collect, params) if measures_gpus else collect(params)
    except ParameterError as exc:
        result = ProbeResult("error", {}, "bad parameters: %s" % exc)
    except ProbeError as exc:
        result = ProbeResult("error", exc.data, str(exc))
    except Exception as exc:  # the probe must always leave an envelope behind
        result = ProbeResult(
            "error",
            {"traceback": traceback.format_exc(limit=20)[-4000:]},
            "the probe raised %s: %s" % (type(exc).__name__, exc),
        )
    envelope = build_envelope(probe, result, started, time.monotonic() - clock)
    if args.out:
        write_json_atomically(args.out, envelope)
    else:
        try:
            json.dump(envelope, sys.stdout, indent=2, sort_keys=True, default=str)
            sys.stdout.write("\n")
            sys.stdout.flush()
        except BrokenPipeError:  # `| head` closed the pipe; keep Python's exit-time flush from failing too
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
    return 0
