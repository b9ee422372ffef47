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

SCHEMA_VERSION = "1"
PROBE_STATUSES = ("ok", "partial", "unavailable", "error", "timeout")
ENVELOPE_KEYS = ("schema_version", "probe", "host", "status", "started", "duration_s", "command",
                 "environment", "reason", "data")
RAW_OUTPUT_LIMIT_BYTES = 1024 * 1024


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
    lines = [line for line in (stderr_tail or "").strip().splitlines() if line.strip()]
    if not lines:
        return "it printed nothing on stderr"
    return "last stderr lines: " + " | ".join(lines[-5:])


def interpret(probe, host, outcome, output_bytes, stderr_tail, started, python, stdout_tail=""):
    """Decide the envelope of one probe run.

    ``outcome`` is a ProcessOutcome; ``output_bytes`` is the content of the --out file or None
    when the probe wrote none. Returns ``(envelope, raw_output)``; ``raw_output`` is the text
    of an unparsable output file, or what the probe printed on stdout (``stdout_tail``) when it
    wrote no result file, kept so that nothing the probe wrote is lost.
    """
    command = outcome.argv
    duration = outcome.duration_s

    if outcome.spawn_error is not None:
        error = outcome.spawn_error
        if isinstance(error, FileNotFoundError):
            reason = ("the interpreter %r does not exist on this host; set gpufleet_python (probe role: "
                      "probe_python) to a Python >= 3.9 that exists there" % python)
        elif isinstance(error, PermissionError):
            reason = "the interpreter %r is not executable by this user: %s" % (python, error)
        else:
            reason = "could not start %r: %s" % (python, error)
        return failure_envelope(probe, host, "error", reason, command, started, duration), None

    if outcome.timed_out:
        limit = "its %g s limit" % outcome.timeout_s if getattr(outcome, "timeout_s", None) else "its time limit"
        reason = ("the probe did not finish within %s and its whole process group was killed after %.0f s; raise "
                  "the limit (probe_timeouts: {%s: seconds}) if the host is merely slow, otherwise find out why it "
                  "hangs (%s)" % (limit, duration, probe, _stderr_hint(stderr_tail)))
        return failure_envelope(probe, host, "timeout", reason, command, started, duration), None

    if outcome.signal_number is not None:
        reason = "the probe was killed by %s (signal %d) before it finished; %s" % (
            outcome.signal_name, outcome.signal_number, _stderr_hint(stderr_tail))
        return failure_envelope(probe, host, "error", reason, command, started, duration), None

    if output_bytes is None:
        if outcome.returncode:
            reason = "the probe exited with code %d without writing a result; %s" % (
                outcome.returncode, _stderr_hint(stderr_tail))
        else:
            reason = "the probe exited with code 0 but wrote no result file; %s" % _stderr_hint(stderr_tail)
        if not (stdout_tail or "").strip():
            return failure_envelope(probe, host, "error", reason, command, started, duration), None
        reason += "; what it printed on stdout is kept beside the result (.raw)"
        return failure_envelope(probe, host, "error", reason, command, started, duration), stdout_tail

    raw = output_bytes[:RAW_OUTPUT_LIMIT_BYTES].decode("utf-8", "replace")
    try:
        document = json.loads(output_bytes.decode("utf-8"))
    except (UnicodeDecodeError, ValueError) as exc:
        reason = "the probe's result file is not valid JSON (%s); the raw output is kept beside the result" % exc
        return failure_envelope(probe, host, "error", reason, command, started, duration), raw

    problem = _envelope_shape_problem(document, probe)
    if problem:
        reason = "the probe's result is not an envelope: %s; the raw output is kept beside the result" % problem
        return failure_envelope(probe, host, "error", reason, command, started, duration), raw

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
    if outcome.stragglers_killed:
        envelope.setdefault("notes", []).append(
            "the probe left processes running in its process group; they were killed")
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
