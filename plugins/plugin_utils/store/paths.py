"""Where a run's files live: results/<run-id>/<host>/<probe>.json, with names that cannot escape or collide. The one
definition of the store's layout: every reader and writer names a file through it."""
from __future__ import annotations

import hashlib
import os
import re
from typing import Optional

_SAFE_CHARS = re.compile(r"[^A-Za-z0-9._-]")
RUN_ID_PATTERN = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$")
# The fleet history page the report writes beside the runs (report/history_page.py, docs/history.md "Pictures").
HISTORY_PAGE_FILE = "history.html"
# Names the store itself uses inside the results directory: never a run id.
RESERVED_RUN_IDS = ("latest", HISTORY_PAGE_FILE)
# A directory name stays well inside NAME_MAX (255 bytes) with room for the store's temporary-file prefix.
HOST_DIR_NAME_MAX = 120
HASH_SUFFIX_CHARS = 16
PROBE_NAME_PATTERN = re.compile(r"^[a-z][a-z0-9_]{0,63}$")
# The run's own files, beside its host directories: the one list that the writers name their files from and that
# host_dir_name escapes, so that no host's directory can take one's place (a host named run.json or index.html).
RUN_RECORD_FILE = "run.json"
RUN_RECORD_LIMIT_BYTES = 4 * 2 ** 20
INDEX_HTML_FILE, INDEX_MD_FILE = "index.html", "index.md"
FLEET_JSON_FILE, JUNIT_FILE, PROMETHEUS_FILE = "fleet.json", "junit.xml", "gpufleet.prom"
FLEET_INDEX_FILES = (INDEX_HTML_FILE, INDEX_MD_FILE)
FLEET_EXPORT_FILES = (FLEET_JSON_FILE, JUNIT_FILE, PROMETHEUS_FILE)
# Each host's outcome (its verdict, root cause and what was done about it: the hook for a scheduler's own tasks,
# plugins/plugin_utils/act/outcome.py) as <run>/outcomes/<host dir name>.json; and what acting in Slurm did in the run.
OUTCOMES_DIR, SLURM_ACTIONS_FILE = "outcomes", "slurm-actions.json"
# Held while acting in Slurm reads and writes the record (store/run_lock.py); a leading '.' no host directory can have.
SLURM_ACTIONS_LOCK = ".slurm-actions.lock"
RUN_LEVEL_NAMES = (RUN_RECORD_FILE,) + FLEET_INDEX_FILES + FLEET_EXPORT_FILES + (OUTCOMES_DIR, SLURM_ACTIONS_FILE)
# The run index (plugin_utils/history/, docs/history.md): SQLite in the results directory beside the runs, with SQLite's
# own -wal and -shm beside it; a leading '.' that RUN_ID_PATTERN never matches, so no run id can take its name.
HISTORY_INDEX_FILE = ".gpufleet-history.sqlite3"
HISTORY_INDEX_SIDE_FILES = (HISTORY_INDEX_FILE + "-wal", HISTORY_INDEX_FILE + "-shm")
# The run's own directories, never read as a host's.
RUN_LEVEL_DIRS = (OUTCOMES_DIR,)
# A probe's files in its host's directory: its result, and what it said when that was rejected (the store kept it).
RESULT_SUFFIX, RAW_SUFFIX = ".json", ".raw"
# The report's files in each host's directory: its dossier, and beside it every value of its results (a host of 8 GPUs
# has tens of thousands, too many for the page a person reads first); each (HTML, Markdown).
DOSSIER_HTML_FILE, DOSSIER_MD_FILE = "dossier.html", "dossier.md"
MEASUREMENTS_HTML_FILE, MEASUREMENTS_MD_FILE = "measurements.html", "measurements.md"
DOSSIER_FILES = (DOSSIER_HTML_FILE, DOSSIER_MD_FILE)
MEASUREMENTS_FILES = (MEASUREMENTS_HTML_FILE, MEASUREMENTS_MD_FILE)
HOST_REPORT_FILES = DOSSIER_FILES + MEASUREMENTS_FILES


def host_dir_name(inventory_hostname: str) -> str:
    """A file-system-safe, injective name for a host: unsafe bytes become %XX; a leading '.' (hidden, '.', '..',
    the store's temporary files) and the first character of a name in RUN_LEVEL_NAMES are escaped too, so unquoting
    still gives back the host name and no host's directory is one of the run's own files (in any case: a results
    directory on a case-insensitive file system, APFS or an SMB share, holds Index.html where index.html is)."""
    if not inventory_hostname:
        raise ValueError("an empty host name has no results directory")
    encoded = "".join(
        char if not _SAFE_CHARS.match(char) else "".join("%%%02X" % byte for byte in char.encode("utf-8"))
        for char in inventory_hostname
    )
    if encoded.startswith(".") or encoded.lower() in RUN_LEVEL_NAMES:
        encoded = "%%%02X" % ord(encoded[0]) + encoded[1:]
    if len(encoded) > HOST_DIR_NAME_MAX:
        # Bounded and still collision-free: the cut name plus a hash of the whole one (the real name is in inputs.json).
        digest = hashlib.sha256(inventory_hostname.encode("utf-8", "surrogatepass")).hexdigest()[:HASH_SUFFIX_CHARS]
        cut = encoded[:HOST_DIR_NAME_MAX - HASH_SUFFIX_CHARS - 1]
        cut = cut[:cut.rfind("%")] if "%" in cut[-2:] else cut  # never end inside a %XX escape
        encoded = "%s~%s" % (cut, digest)
    return encoded


def is_hashed_dir_name(dir_name: str) -> bool:
    """Whether the name was cut and hashed, so unquoting it does not give back the host name."""
    return "~" in dir_name  # host_dir_name writes "~" as %7E, so only a cut name holds one


def check_run_id(run_id: str) -> str:
    if not RUN_ID_PATTERN.match(run_id or ""):
        raise ValueError("run id %r must be 1-128 letters, digits, '.', '_' or '-', starting with a letter or digit" % run_id)
    if run_id == HISTORY_PAGE_FILE:
        raise ValueError("run id %r is the name of the fleet history page the report writes beside the runs, not a run id" % run_id)
    if run_id in RESERVED_RUN_IDS:
        raise ValueError("run id %r is the name of the link to the newest run, not a run id: name the run itself "
                         "(ls -l on the results directory shows where %s points)" % (run_id, run_id))
    return run_id


def check_probe_name(name: str) -> str:
    if not PROBE_NAME_PATTERN.match(name or ""):
        raise ValueError("probe name %r must be lower-case letters, digits and '_', starting with a letter" % name)
    return name


def run_dir(results_dir: str, run_id: str) -> str:
    return os.path.join(os.path.abspath(results_dir), check_run_id(run_id))


def host_dir(results_dir: str, run_id: str, inventory_hostname: str) -> str:
    return os.path.join(run_dir(results_dir, run_id), host_dir_name(inventory_hostname))


def outcome_file_name(inventory_hostname: str) -> str:
    """<host dir name>.json: the name of a host's outcome in the run's outcomes directory."""
    return host_dir_name(inventory_hostname) + RESULT_SUFFIX


def is_outcome_file_name(name: str) -> bool:
    return name.endswith(RESULT_SUFFIX) and not name.startswith(".")


def outcome_path(results_dir: str, run_id: str, inventory_hostname: str) -> str:
    return os.path.join(run_dir(results_dir, run_id), OUTCOMES_DIR, outcome_file_name(inventory_hostname))


def result_file_name(probe: str) -> str:
    """<probe>.json: the name of a probe's result in its host's directory."""
    return probe + RESULT_SUFFIX


def raw_file_name(probe: str) -> str:
    """<probe>.raw: what the probe said when its result was rejected, beside where its result would be."""
    return probe + RAW_SUFFIX


def result_file_probe(name: str) -> Optional[str]:
    """The probe whose result file ``name`` would be, or None (another file, or no probe's name)."""
    probe = name[:-len(RESULT_SUFFIX)] if name.endswith(RESULT_SUFFIX) else ""
    return probe if PROBE_NAME_PATTERN.match(probe) else None


def probe_result_path(results_dir: str, run_id: str, inventory_hostname: str, probe: str) -> str:
    return os.path.join(host_dir(results_dir, run_id, inventory_hostname), result_file_name(check_probe_name(probe)))
