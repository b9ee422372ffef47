# -*- coding: utf-8 -*-
# Copyright: gpufleet.validation contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Turn a finished probe process into an envelope, whatever went wrong.

Pure Python (standard library only). Every failure becomes an envelope with a status and a
reason a person can act on; the probe's own envelope is kept when it wrote a sound one.
"""
from __future__ import annotations

import datetime
import json
import os

from ansible_collections.gpufleet.validation.plugins.module_utils.probe_output_text import (
    escaped,
    json_string_problem,
    transportable,
    utf8_problem,
)
from ansible_collections.gpufleet.validation.plugins.module_utils.probe_process import FileCapture
from ansible_collections.gpufleet.validation.plugins.module_utils.strict_json import loads as strict_json_loads
from ansible_collections.gpufleet.validation.plugins.module_utils.envelope_statuses import PROBE_STATUSES

SCHEMA_VERSION = "1"
ENVELOPE_KEYS = ("schema_version", "probe", "host", "status", "started", "duration_s", "command",
                 "environment", "reason", "data")
RAW_OUTPUT_LIMIT_BYTES = 1024 * 1024  # what raw_output keeps at most (head and tail halves when cut)
RESULT_FILE_LIMIT_BYTES = 8 * 1024 * 1024  # a larger result file is not read whole nor judged
STRAGGLERS_NAMED = 20
# The variable that gives a probe the engine's value for its start (probes/probelib/runner.py has the probes' copy).
NONCE_VARIABLE = "GPUFLEET_PROBE_NONCE"
# Both times are whole seconds: a probe that started within the same second as its start may read a second earlier.
STARTED_SLACK = datetime.timedelta(seconds=2)


def utc_now_iso():
    return datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")


def failure_envelope(probe, host, status, reason, command=None, started=None, duration_s=0.0, data=None):
    """An envelope made by the engine, not by the probe."""
    return {
        "schema_version": SCHEMA_VERSION,
        "probe": probe,
        "host": host,
        "status": status,
        "started": started or utc_now_iso(),
        "duration_s": round(float(duration_s), 3),
        "command": list(command or []),
        "environment": {},
        "reason": reason,
        "data": data if data is not None else {},
    }


def _stderr_hint(stderr_tail):
    lines = [escaped(line) for line in (stderr_tail or "").strip().splitlines() if line.strip()]
    if not lines:
        return "it printed nothing on stderr"
    return "last stderr lines: " + " | ".join(lines[-5:])


def _size(count):
    if count >= 1024 * 1024:
        return "%.1f MiB" % (count / (1024.0 * 1024.0))
    if count >= 1024:
        return "%.0f KiB" % (count / 1024.0)
    return "%d bytes" % count


def _as_capture(output):
    if output is None or isinstance(output, FileCapture):
        return output
    return FileCapture(output, b"", len(output))


def raw_text(capture):
    """What is kept of a result file beside the result: all of it up to RAW_OUTPUT_LIMIT_BYTES, else its head and its
    tail around a line that says how much was left out."""
    if capture.complete and capture.size <= RAW_OUTPUT_LIMIT_BYTES:
        return transportable(capture.head)
    half = RAW_OUTPUT_LIMIT_BYTES // 2
    head = capture.head[:half]
    tail = (capture.tail if not capture.complete else capture.head)[-half:]
    return "%s\n[gpufleet: %d of the output's %d bytes were left out here]\n%s" % (
        transportable(head), capture.size - len(head) - len(tail), capture.size, transportable(tail))


def _kept(capture):
    if capture.size <= RAW_OUTPUT_LIMIT_BYTES:
        return "the raw output is kept beside the result"
    return "its first and last %s (of %s) are kept beside the result (.raw)" % (
        _size(RAW_OUTPUT_LIMIT_BYTES // 2), _size(capture.size))


def _spawn_failure_reason(error, python):
    if isinstance(error, FileNotFoundError):
        return ("the interpreter %r does not exist on this host; set gpufleet_python (probe role: "
                "probe_python) to a Python >= 3.9 that exists there" % python)
    if isinstance(error, PermissionError) and os.path.isdir(python):
        return ("the interpreter %r is a directory, not a Python interpreter; set gpufleet_python (probe role: "
                "probe_python) to the Python executable itself (for example %r)"
                % (python, os.path.join(python, "bin", "python3")))
    if isinstance(error, PermissionError):
        return "the interpreter %r is not executable by this user: %s" % (python, error)
    return "could not start %r: %s" % (python, error)


def straggler_notes(outcome):
    """Notes that name what the probe left running (and was killed), and say when descendants could not be tracked."""
    notes = []
    stragglers = getattr(outcome, "stragglers", [])
    if stragglers:
        named = ["pid %d (%s)" % (pid, escaped(name)) for pid, name in stragglers[:STRAGGLERS_NAMED]]
        if len(stragglers) > STRAGGLERS_NAMED:
            named.append("and %d more" % (len(stragglers) - STRAGGLERS_NAMED))
        notes.append("the probe left processes running after it ended; they were killed: %s" % ", ".join(named))
    elif outcome.stragglers_killed:
        notes.append("the probe left processes running in its process group; they were killed")
    if not getattr(outcome, "descendants_tracked", True) and outcome.spawn_error is None:
        notes.append("this host cannot make the engine a child subreaper (Linux only), so only the probe's process "
                     "group was killed: a process it moved out of that group (setsid) may still run")
    return notes


def interpret(probe, host, outcome, output_bytes, stderr_tail, started, python, stdout_tail="", stdout_size=None,
              nonce=None):
    """Decide the envelope of one probe run.

    ``outcome`` is a ProcessOutcome; ``output_bytes`` is the content of the --out file (bytes, or a FileCapture of
    it when it was too large to read whole) or None when the probe wrote none. Returns ``(envelope, raw_output)``;
    ``raw_output`` is the text of an output file that could not be trusted (bytes that are not UTF-8 as \\xNN, cut
    to RAW_OUTPUT_LIMIT_BYTES), or what the probe printed on stdout (``stdout_tail``, of ``stdout_size`` bytes)
    when it wrote no result file, kept so that nothing the probe wrote is lost.

    ``nonce``: the engine's value for this start (given to the probe as NONCE_VARIABLE); a result that does not carry
    it back, or that says it started before this start, is not this start's result (a copy or a replay: issue 45) and
    becomes an error saying what it claimed. Every envelope returned for this start carries the nonce.
    """
    envelope, raw = _decide(probe, host, outcome, _as_capture(output_bytes), stderr_tail, started, python,
                            stdout_tail, stdout_size, nonce)
    notes = straggler_notes(outcome)
    if notes:
        envelope["notes"] = list(envelope.get("notes", [])) + notes
    if nonce:
        envelope["nonce"] = nonce
    return envelope, raw


def _not_this_start(document, nonce, started):
    """Why a well-formed envelope is not the result of this start of the probe, or None."""
    if nonce and document.get("nonce") != nonce:
        told = "it carries no nonce" if "nonce" not in document else "its nonce is another start's"
        return ("the result does not answer this start of the probe (%s): it claims host %s, started %s. A result copied "
                "or replayed from another host or an earlier run is not stored as this host's; if this probe is your "
                "own, write the environment variable %s back as the envelope's nonce"
                % (told, json.dumps(str(document.get("host")))[:200], json.dumps(str(document.get("started")))[:80], NONCE_VARIABLE))
    claimed = _instant(document.get("started"))
    began = _instant(started)
    if claimed is not None and began is not None and claimed < began - STARTED_SLACK:
        return ("the result says it started at %s, %.0f s before this start of the probe (%s): a result copied or "
                "replayed from an earlier run is not stored as this host's" % (
                    document.get("started"), (began - claimed).total_seconds(), started))
    return None


def _instant(text):
    try:
        moment = datetime.datetime.fromisoformat(str(text))
    except ValueError:
        return None
    return moment if moment.tzinfo is not None else None


def _decide(probe, host, outcome, capture, stderr_tail, started, python, stdout_tail, stdout_size, nonce=None):
    command = outcome.argv
    duration = outcome.duration_s

    def failed(status, reason):
        return failure_envelope(probe, host, status, reason, command, started, duration)

    if outcome.spawn_error is not None:
        return failed("error", _spawn_failure_reason(outcome.spawn_error, python)), None

    if outcome.timed_out:
        limit = "its %g s limit" % outcome.timeout_s if getattr(outcome, "timeout_s", None) else "its time limit"
        reason = ("the probe did not finish within %s and its whole process group was killed after %.0f s; raise "
                  "the limit (probe_timeouts: {%s: seconds}) if the host is merely slow, otherwise find out why it "
                  "hangs (%s)" % (limit, duration, probe, _stderr_hint(stderr_tail)))
        return failed("timeout", reason), None

    if outcome.signal_number is not None:
        reason = "the probe was killed by %s (signal %d) before it finished; %s" % (
            outcome.signal_name, outcome.signal_number, _stderr_hint(stderr_tail))
        return failed("error", reason), None

    if capture is None:
        if outcome.returncode:
            reason = "the probe exited with code %d without writing a result; %s" % (
                outcome.returncode, _stderr_hint(stderr_tail))
        else:
            reason = "the probe exited with code 0 but wrote no result file; %s" % _stderr_hint(stderr_tail)
        if not (stdout_tail or "").strip():
            return failed("error", reason), None
        reason += "; what it printed on stdout is kept beside the result (.raw)"
        if stdout_size and stdout_size > len(stdout_tail.encode("utf-8", "surrogatepass")):
            reason += " (its last %s of %s)" % (_size(len(stdout_tail.encode("utf-8", "surrogatepass"))),
                                                _size(stdout_size))
        return failed("error", reason), stdout_tail

    if not capture.complete:
        reason = ("the probe's result file is %s, more than the %s a result may have, so it was neither read whole "
                  "nor judged; %s" % (_size(capture.size), _size(RESULT_FILE_LIMIT_BYTES), _kept(capture)))
        return failed("error", reason), raw_text(capture)

    output_bytes = capture.head
    problem = utf8_problem(output_bytes)
    if problem:
        reason = ("the probe's result file is not UTF-8 text: %s; %s (a byte that is not UTF-8 as \\xNN)"
                  % (problem, _kept(capture)))
        return failed("error", reason), raw_text(capture)
    try:
        document = strict_json_loads(output_bytes.decode("utf-8"))
    except ValueError as exc:
        reason = "the probe's result file is not valid JSON (%s); %s" % (exc, _kept(capture))
        return failed("error", reason), raw_text(capture)

    problem = json_string_problem(document)
    if problem:
        reason = "the probe's result holds a string that is not clean text: %s; %s" % (problem, _kept(capture))
        return failed("error", reason), raw_text(capture)

    problem = _envelope_shape_problem(document, probe)
    if problem:
        reason = "the probe's result is not an envelope: %s; %s" % (problem, _kept(capture))
        return failed("error", reason), raw_text(capture)

    problem = _not_this_start(document, nonce, started)
    if problem:
        return failed("error", problem), raw_text(capture)

    envelope = dict(document)
    envelope["command"] = list(command)
    envelope["duration_s"] = round(duration, 3)
    envelope["host"] = host
    if outcome.returncode:
        envelope["data"] = {"reported_by_probe": {"status": envelope["status"], "reason": envelope["reason"]},
                            "reported_data": envelope["data"]}
        envelope["status"] = "error"
        envelope["reason"] = "the probe wrote a result but exited with code %d; %s" % (
            outcome.returncode, _stderr_hint(stderr_tail))
    return envelope, None


def _envelope_shape_problem(document, probe):
    if not isinstance(document, dict):
        return "expected a JSON object, found %s" % type(document).__name__
    missing = [key for key in ENVELOPE_KEYS if key not in document]
    if missing:
        return "missing keys %s" % ", ".join(missing)
    if document.get("probe") != probe:
        return "it names probe %r, expected %r" % (document.get("probe"), probe)
    if document.get("status") not in PROBE_STATUSES:
        return "unknown status %r" % (document.get("status"),)
    if not isinstance(document.get("data"), dict):
        return "data is not an object"
    return None
