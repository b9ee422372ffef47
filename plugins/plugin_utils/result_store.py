"""Validate a probe's envelope and store it: a trusted result, or an error that keeps what was rejected."""
from __future__ import annotations

import json
import os
import tempfile

from ..module_utils.probe_envelope import failure_envelope
from .atomic_write import write_json_atomically, write_text_atomically
from .schema_check import envelope_problems

PROVENANCE_KEYS = ("run_id", "collection_version", "probe_sha256")
REASON_PROBLEMS_SHOWN = 5


def trusted_envelope(envelope: dict, raw_output: str | None = None) -> tuple[dict, str | None]:
    """Return the envelope to store and the raw text to keep beside it.

    An envelope that breaks its schema is replaced by an ``error`` envelope naming the violations;
    the rejected envelope becomes the raw text, so nothing the probe said is lost.
    """
    problems = envelope_problems(envelope)
    if not problems:
        return envelope, raw_output
    reason = ("the probe's result breaks its schema, so it is not trusted; the rejected result is kept "
              "beside this file (.raw). Problems: %s" % "; ".join(problems[:REASON_PROBLEMS_SHOWN]))
    duration = envelope.get("duration_s")
    broken = failure_envelope(
        str(envelope.get("probe") or "unknown"), str(envelope.get("host") or "unknown"), "error", reason,
        [str(part) for part in envelope.get("command") or []] if isinstance(envelope.get("command"), list) else [],
        envelope.get("started") if isinstance(envelope.get("started"), str) else None,
        duration if isinstance(duration, (int, float)) and not isinstance(duration, bool) and duration >= 0 else 0.0,
        data={"schema_problems": problems})
    for key in PROVENANCE_KEYS:
        if key in envelope:
            broken[key] = envelope[key]
    return broken, json.dumps(envelope, indent=2, sort_keys=True, default=str)


def store_result(result_path: str, envelope: dict, raw_output: str | None = None) -> dict:
    """Validate, then write ``<probe>.json`` (and ``<probe>.raw`` when something was rejected) atomically."""
    stored, raw = trusted_envelope(envelope, raw_output)
    write_json_atomically(result_path, stored)
    if raw is not None:
        write_text_atomically(result_path[:-len(".json")] + ".raw", raw)
    return stored


def prepare_result_dir(result_path: str) -> None:
    """Make the directory of ``result_path`` and prove that a file can be written there (an unnamed temporary file,
    gone when closed), so a run whose results cannot be stored fails before the probe runs, not after."""
    directory = os.path.dirname(os.path.abspath(result_path))
    os.makedirs(directory, exist_ok=True)
    with tempfile.TemporaryFile(dir=directory):
        pass
