"""Where a run's files live: results/<run-id>/<host>/<probe>.json, with names that cannot escape."""
from __future__ import annotations

import os
import re

_SAFE_CHARS = re.compile(r"[^A-Za-z0-9._-]")
RUN_ID_PATTERN = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$")
PROBE_NAME_PATTERN = re.compile(r"^[a-z][a-z0-9_]{0,63}$")


def host_dir_name(inventory_hostname: str) -> str:
    """A file-system-safe, injective name for a host: unsafe bytes become %XX, '.' and '..' are escaped."""
    if not inventory_hostname:
        raise ValueError("an empty host name has no results directory")
    encoded = "".join(
        char if not _SAFE_CHARS.match(char) else "".join("%%%02X" % byte for byte in char.encode("utf-8"))
        for char in inventory_hostname
    )
    if encoded.startswith("."):
        encoded = "%2E" + encoded[1:]
    return encoded


def check_run_id(run_id: str) -> str:
    if not RUN_ID_PATTERN.match(run_id or ""):
        raise ValueError("run id %r must be 1-128 letters, digits, '.', '_' or '-', starting with a letter or digit" % run_id)
    return run_id


def check_probe_name(name: str) -> str:
    if not PROBE_NAME_PATTERN.match(name or ""):
        raise ValueError("probe name %r must be lower-case letters, digits and '_', starting with a letter" % name)
    return name


def run_dir(results_dir: str, run_id: str) -> str:
    return os.path.join(os.path.abspath(results_dir), check_run_id(run_id))


def host_dir(results_dir: str, run_id: str, inventory_hostname: str) -> str:
    return os.path.join(run_dir(results_dir, run_id), host_dir_name(inventory_hostname))


def probe_result_path(results_dir: str, run_id: str, inventory_hostname: str, probe: str) -> str:
    return os.path.join(host_dir(results_dir, run_id, inventory_hostname), check_probe_name(probe) + ".json")
