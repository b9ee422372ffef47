"""Reading results back from the store: one way for the report, drift's previous run and a probe's derived inputs.

Only probe results are read (never the store's own records), never through a symbolic link, never more than
RESULT_LIMIT_BYTES; what cannot be read raises OSError or ValueError with the reason. The JSON is parsed as the probe
module parses a probe's output (module_utils/strict_json.py): a duplicate key, NaN or nesting too deep is refused.
"""
from __future__ import annotations

import json
import os
from typing import Any, Dict, List, Optional, Tuple

from ...module_utils import strict_json
from ...module_utils.envelope_statuses import MEASURED_STATUSES
from .paths import PROBE_NAME_PATTERN, result_file_name, result_file_probe
from .run_dir import STORE_FILES
from .safe_fs import DIRECTORY_FLAGS, read_file_at

FileIdentity = Tuple[int, ...]

# A result larger than this is not loaded: no probe writes one, and reading it could exhaust the controller's memory.
RESULT_LIMIT_BYTES = 64 * 2 ** 20


def read_json_below(host_path: str, name: str, limit: int = RESULT_LIMIT_BYTES) -> Any:
    """The JSON in host_path/name, never through a link, at most limit bytes; OSError or ValueError."""
    return read_json_with_identity(host_path, name, limit)[0]


def _bytes_with_identity(host_path: str, name: str, limit: int) -> Tuple[bytes, FileIdentity]:
    fd = os.open(host_path, DIRECTORY_FLAGS)
    try:
        return read_file_at(fd, name, limit, os.path.join(os.path.basename(host_path), name))
    finally:
        os.close(fd)


def read_json_with_identity(host_path: str, name: str, limit: int = RESULT_LIMIT_BYTES) -> Tuple[Any, FileIdentity]:
    """read_json_below, and the identity of the file it read (safe_fs.read_file_at)."""
    payload, identity = _bytes_with_identity(host_path, name, limit)
    return strict_json.loads(payload.decode("utf-8")), identity


def read_envelope_again(host_path: str, probe: str, identity: FileIdentity) -> Tuple[Optional[Dict[str, Any]], FileIdentity]:
    """A result read back a second time: (its envelope, identity) where the file still has the identity it had when it
    was first read (and parsed strictly: these bytes passed strict_json then, so the plain parser reads them the same,
    three times faster), else (None, its identity now)."""
    payload, now = _bytes_with_identity(host_path, result_file_name(probe), RESULT_LIMIT_BYTES)
    if now != identity:
        return None, now
    return _envelope_object(json.loads(payload.decode("utf-8"))), now


def result_probes(host_path: str) -> List[str]:
    """The probes with a result file in a host's directory (not its store records); [] for a link or no directory."""
    if not os.path.isdir(host_path) or os.path.islink(host_path):
        return []
    found = []
    for name in sorted(os.listdir(host_path)):
        probe = result_file_probe(name)
        if probe is not None and name not in STORE_FILES:
            found.append(probe)
    return found


def write_failures(host_path: str, mark: str) -> Dict[str, Tuple[str, float]]:
    """{probe: (errno name, when)} of the write failures recorded in a host's directory (files named
    <probe><mark><ERRNO NAME>, plugins/plugin_utils/store/results.py), the latest of each probe."""
    if not os.path.isdir(host_path) or os.path.islink(host_path):
        return {}
    found: Dict[str, Tuple[str, float]] = {}
    for name in sorted(os.listdir(host_path)):
        probe, unused_mark, error_name = name.partition(mark)
        if not error_name or not PROBE_NAME_PATTERN.match(probe) or not error_name.isalnum():
            continue
        try:
            when = os.lstat(os.path.join(host_path, name)).st_mtime
        except OSError:
            continue
        if probe not in found or when > found[probe][1]:
            found[probe] = (error_name, when)
    return found


def read_envelope(host_path: str, probe: str) -> Dict[str, Any]:
    """A probe's stored envelope, a JSON object; OSError or ValueError saying why it cannot be read."""
    return read_envelope_with_identity(host_path, probe)[0]


def _envelope_object(envelope: Any) -> Dict[str, Any]:
    if not isinstance(envelope, dict):
        raise ValueError("the file holds a JSON %s, not an object" % type(envelope).__name__)
    return envelope


def read_envelope_with_identity(host_path: str, probe: str) -> Tuple[Dict[str, Any], FileIdentity]:
    """read_envelope, and the identity of the file it read (safe_fs.read_file_at)."""
    envelope, identity = read_json_with_identity(host_path, result_file_name(probe))
    return _envelope_object(envelope), identity


def measured_data(host_path: str, probe: str) -> Optional[Dict[str, Any]]:
    """The data of a probe's stored result when it measured something (ok or partial), else None."""
    try:
        envelope = read_envelope(host_path, probe)
    except (OSError, ValueError):
        return None
    if envelope.get("status") in MEASURED_STATUSES and isinstance(envelope.get("data"), dict):
        return envelope["data"]
    return None
