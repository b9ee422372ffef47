"""Validate a probe's envelope and store it: a trusted result, or an error that keeps what was rejected."""
from __future__ import annotations

import errno
import json
import os

from ...module_utils.probe_envelope import failure_envelope
from ...module_utils.secret_redaction import redact_credentials
from .atomic import json_text
from .paths import RESULT_SUFFIX, raw_file_name, result_file_name, result_file_probe
from .safe_fs import NEW_FILE_FLAGS, open_root, write_bytes_at
from .schemas import envelope_problems, schemas_digest

PROVENANCE_KEYS = ("run_id", "collection_version", "probe_sha256", "params")
REASON_PROBLEMS_SHOWN = 5
RAW_LIMIT_BYTES = 8 * 2 ** 20  # a rejected output this large is for a person to read, not to replay
# <probe>.write-failed-<ERRNO NAME>: an empty file that says the probe's result was made but could not be written. Its
# name is the record, so it needs no data block: it can be made on a file system with no space left (docs/store.md).
WRITE_FAILED_MARK = ".write-failed-"


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


def bounded_raw(raw: str, limit_bytes: int = RAW_LIMIT_BYTES) -> str:
    """raw, or its head and tail with the size of what was cut between them, so a huge rejected output stays readable."""
    payload = raw.encode("utf-8", "backslashreplace")
    if len(payload) <= limit_bytes:
        return raw
    half = limit_bytes // 2
    marker = ("\n[gpufleet: %d of %d bytes cut here; the probe's output was larger than the %d-byte limit for "
              ".raw]\n" % (len(payload) - 2 * half, len(payload), limit_bytes))
    return (payload[:half].decode("utf-8", "ignore") + marker + payload[-half:].decode("utf-8", "ignore"))


def store_result_at(host_fd: int, probe: str, envelope: dict, raw_output: str | None, shown_dir: str) -> dict:
    """Validate, then write ``<probe>.json`` (and ``<probe>.raw`` when something was rejected) atomically inside the
    host's directory descriptor (plugins/plugin_utils/store/run_dir.py), never through a link."""
    # The host redacted them already (the probe, then the module): again here, for a host whose copy is older or bypassed.
    stored, raw = trusted_envelope(redact_credentials(envelope), redact_credentials(raw_output))
    stored["schemas_sha256"] = schemas_digest()  # what it was just validated against (schemas.stored_envelope_problems)
    try:
        write_bytes_at(host_fd, result_file_name(probe), json_text(stored).encode("utf-8"),
                       shown=os.path.join(shown_dir, result_file_name(probe)))
    except OSError as exc:
        record_write_failure(host_fd, probe, exc)
        raise
    clear_write_failures(host_fd, probe)
    if raw is not None:
        write_bytes_at(host_fd, raw_file_name(probe), bounded_raw(raw).encode("utf-8", "backslashreplace"),
                       shown=os.path.join(shown_dir, raw_file_name(probe)))
    return stored


def write_failure_name(probe: str, error_number: int) -> str:
    return probe + WRITE_FAILED_MARK + errno.errorcode.get(error_number, "E%d" % error_number)


def record_write_failure(host_fd: int, probe: str, exc: OSError) -> bool:
    """Leave <probe>.write-failed-<ERRNO> (empty) in the host's directory; False where even that cannot be made."""
    if not isinstance(exc.errno, int):
        return False
    try:
        os.close(os.open(write_failure_name(probe, exc.errno), NEW_FILE_FLAGS, 0o644, dir_fd=host_fd))
    except FileExistsError:
        pass
    except OSError:
        return False
    return True


def clear_write_failures(host_fd: int, probe: str) -> None:
    """Remove what record_write_failure left for the probe: its result is written now."""
    for name in os.listdir(host_fd):
        if name.startswith(probe + WRITE_FAILED_MARK):
            try:
                os.unlink(name, dir_fd=host_fd)
            except FileNotFoundError:
                pass


def store_result(result_path: str, envelope: dict, raw_output: str | None = None) -> dict:
    """store_result_at for a path: its directory is made if needed, the files are never written through a link."""
    directory = os.path.dirname(os.path.abspath(result_path))
    name = os.path.basename(result_path)
    probe = result_file_probe(name)
    if probe is None:
        raise ValueError("a result file is <probe>%s, not %s" % (RESULT_SUFFIX, name))
    with open_root(directory) as dir_fd:
        return store_result_at(dir_fd, probe, envelope, raw_output, directory)
