"""The one owner of a run's directory on the controller: who may write it, and what each host was judged with.

    <results>/                             flock'd while a run is made or joined
    <results>/<run id>/run.json            the run: its number in the order runs were opened, and every playbook run
                                           (writer) that wrote into it
    <results>/<run id>/                    flock'd while a host's claim changes
    <results>/<run id>/<host>/writer.json  the writer that holds this host's directory
    <results>/<run id>/<host>/inputs.json  the host's judge inputs: its real name, profile, rule overrides, groups, Python
    <results>/<run id>/<host>/<probe>.json the results (plugins/plugin_utils/store/results.py)

A run id names one run: a playbook run opens a fresh one, or joins an existing one only when told to (``resume``: add a
slice, re-probe hosts). Two live writers never hold one host: the second is refused, naming the first. Nothing here
follows a link below the results directory (plugins/plugin_utils/store/safe_fs.py).
"""
from __future__ import annotations

import fcntl
import hashlib
import json
import os
import socket
import time
from contextlib import contextmanager
from typing import Any, Dict, Iterator, List, Optional

from ...module_utils import strict_json
from ...module_utils.process_tree import start_ticks, still_running
from .atomic import json_text
from .paths import RUN_RECORD_FILE, RUN_RECORD_LIMIT_BYTES, check_run_id, host_dir_name, result_file_name
from .run_order import SEQUENCE_FIELD, next_sequence
from .safe_fs import entry_kind, link_target_at, open_dir_at, open_root, read_bytes_at, write_bytes_at

RUN_RECORD = RUN_RECORD_FILE
WRITER_FILE = "writer.json"
INPUTS_FILE = "inputs.json"
STORE_FILES = (RUN_RECORD, WRITER_FILE, INPUTS_FILE)
RECORD_LIMIT_BYTES = RUN_RECORD_LIMIT_BYTES
RESULT_RECORD_LIMIT_BYTES = 64 * 2 ** 20  # read.RESULT_LIMIT_BYTES: read imports this module
RESUME_VARIABLE = "gpufleet_resume"
ANSIBLE_PYTHON = "the interpreter Ansible uses on the host"  # inputs.json's python when none was given or found


class StoreRefused(Exception):
    """The store will not let this playbook run write there; the message says why and what to do."""


def playbook_writer(resume: bool, profile: Optional[str] = None, limit: Optional[str] = None,
                    in_main_process: bool = False) -> Dict[str, Any]:
    """This playbook run as a writer. Every task of one ansible-playbook process computes the same writer_id: the
    process is a worker's parent (or, in_main_process, this process itself), named by the controller, its pid and its
    start time (a reused pid differs there)."""
    pid = os.getpid() if in_main_process else os.getppid()
    ticks = start_ticks(pid)
    controller = socket.gethostname()
    writer_id = hashlib.sha256(("%s|%d|%s" % (controller, pid, ticks)).encode("utf-8", "backslashreplace")).hexdigest()
    return {"writer_id": writer_id[:24], "controller": controller, "pid": pid, "pid_start_ticks": ticks,
            "started": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), "profile": profile, "limit": limit,
            "resume": bool(resume)}


def process_started_epoch(ticks: Optional[int]) -> Optional[float]:
    """When a process that started ``ticks`` clock ticks after boot started, in seconds since the epoch (boot time from
    /proc/uptime, to a hundredth of a second); None where that cannot be known."""
    if not isinstance(ticks, int):
        return None
    try:
        with open("/proc/uptime", "rb") as handle:
            booted = time.time() - float(handle.read().split()[0])
        return booted + ticks / os.sysconf("SC_CLK_TCK")
    except (OSError, ValueError, IndexError):
        return None


def writer_alive(writer: Dict[str, Any]) -> bool:
    """Whether the playbook run that wrote this record still runs (only decidable on the same controller)."""
    if writer.get("controller") != socket.gethostname():
        return True  # another controller's process cannot be seen from here: assume it still writes
    pid = writer.get("pid")
    if not isinstance(pid, int) or pid <= 0:
        return False
    return still_running(pid, writer.get("pid_start_ticks"))


def describe_writer(writer: Dict[str, Any]) -> str:
    return "playbook run %s (pid %s on %s, started %s, profile %s%s)" % (
        str(writer.get("writer_id", "?"))[:12], writer.get("pid"), writer.get("controller"), writer.get("started"),
        writer.get("profile"), ", --limit %s" % writer["limit"] if writer.get("limit") else "")


def _read_json_at(dir_fd: int, name: str, shown: str) -> Optional[Any]:
    if entry_kind(dir_fd, name) == "missing":
        return None
    try:
        return json.loads(read_bytes_at(dir_fd, name, RECORD_LIMIT_BYTES, shown).decode("utf-8"))
    except (ValueError, UnicodeDecodeError) as exc:
        raise StoreRefused("%s is not readable JSON (%s); the store does not guess what it said: move it away" % (
            shown, exc)) from exc


@contextmanager
def _locked(dir_fd: int) -> Iterator[None]:
    """An exclusive flock on the directory itself (Linux allows it on a directory's descriptor): no lock file is left."""
    fcntl.flock(dir_fd, fcntl.LOCK_EX)
    try:
        yield
    finally:
        fcntl.flock(dir_fd, fcntl.LOCK_UN)


def _refuse_linked_run(root_fd: int, run_id: str, shown: str) -> None:
    if entry_kind(root_fd, run_id) == "link":
        raise StoreRefused("%s is a symbolic link (to %s): a run's directory is never reached through a link, so "
                           "nothing was written; remove the link or choose another run id"
                           % (shown, link_target_at(root_fd, run_id)))


@contextmanager
def open_run_dir(results_dir: str, run_id: str, create: bool) -> Iterator[int]:
    """A descriptor of results_dir/run_id, refusing a link there; made when create."""
    check_run_id(run_id)
    with open_root(results_dir, create=create) as root_fd:
        shown = os.path.join(results_dir, run_id)
        _refuse_linked_run(root_fd, run_id, shown)
        fd = open_dir_at(root_fd, run_id, create, shown)
        try:
            yield fd
        finally:
            os.close(fd)


def open_run(results_dir: str, run_id: str, writer: Dict[str, Any]) -> Dict[str, Any]:
    """Let this writer write run_id: a fresh run is made; an existing one is joined only by a writer already recorded
    in its run.json or one that resumes (adds a slice, re-probes hosts). The writer is recorded in run.json."""
    check_run_id(run_id)
    shown = os.path.join(results_dir, run_id)
    with open_root(results_dir) as root_fd, _locked(root_fd):
        _refuse_linked_run(root_fd, run_id, shown)
        kind = entry_kind(root_fd, run_id)
        if kind == "missing":
            os.mkdir(run_id, 0o755, dir_fd=root_fd)
        run_fd = open_dir_at(root_fd, run_id, False, shown)
        try:
            record = _read_json_at(run_fd, RUN_RECORD, os.path.join(shown, RUN_RECORD))
            if record is not None and (not isinstance(record, dict) or not isinstance(record.get("writers"), list)):
                raise StoreRefused("%s does not hold a run record (no writers list); move it away"
                                   % os.path.join(shown, RUN_RECORD))
            known = [entry for entry in (record or {}).get("writers", [])
                     if isinstance(entry, dict) and entry.get("writer_id") == writer["writer_id"]]
            if known:
                return record
            if kind != "missing" and not writer["resume"]:
                raise StoreRefused(
                    "run id %s already names a run in %s, so nothing was written: a run id names one run. Choose a new "
                    "id (or leave gpufleet_run_id unset), or pass -e %s=true to add a slice or re-probe hosts in that "
                    "run (docs/scale.md)" % (run_id, results_dir, RESUME_VARIABLE))
            # A fresh run is numbered in the order runs are opened (store/run_order.py): a run joined keeps its number.
            if record is None:
                record = {"run_id": run_id, "writers": []}
                if kind == "missing":
                    record[SEQUENCE_FIELD] = next_sequence(results_dir, run_id)
            record["writers"].append(writer)
            write_bytes_at(run_fd, RUN_RECORD, json_text(record).encode("utf-8"), shown=os.path.join(shown, RUN_RECORD))
            return record
        finally:
            os.close(run_fd)


def gone_writers(record: Dict[str, Any], writer: Dict[str, Any]) -> List[Dict[str, Any]]:
    """The earlier writers of the run (run.json) that no longer run: a resume says so, whether they ended or were killed."""
    return [entry for entry in (record or {}).get("writers", [])
            if isinstance(entry, dict) and entry.get("writer_id") != writer["writer_id"] and not writer_alive(entry)]


def gone_writer_line(run_id: str, gone: Dict[str, Any]) -> str:
    return ("the writer of run %s (pid %s on %s, started %s) is gone: the results it finished are kept and only what "
            "has no result is probed now (docs/store.md)" % (run_id, gone.get("pid"), gone.get("controller"), gone.get("started")))


def finished_earlier(host_fd: int, probe: str, writer: Dict[str, Any], shown: str) -> Optional[str]:
    """The status of the probe's result when an earlier playbook run wrote it (before this one started) and it is a
    finished result, which a resume keeps (docs/store.md); None when the probe has to run: no result, one of this
    playbook run, or ``unreachable`` (the host was not reached, so nothing was measured)."""
    name = result_file_name(probe)
    if entry_kind(host_fd, name) != "file":
        return None
    started = process_started_epoch(writer.get("pid_start_ticks"))
    if started is None or os.stat(name, dir_fd=host_fd, follow_symlinks=False).st_mtime >= started:
        return None
    try:
        status = strict_json.loads(read_bytes_at(host_fd, name, RESULT_RECORD_LIMIT_BYTES, shown).decode("utf-8")).get("status")
    except (OSError, ValueError, AttributeError):
        status = "error"  # unreadable: kept as it is, for the report to say why
    return None if status == "unreachable" else str(status)


def run_record(results_dir: str, run_id: str) -> Optional[Dict[str, Any]]:
    """run.json of the run, or None for a run written before the store kept one."""
    with open_run_dir(results_dir, run_id, create=False) as run_fd:
        record = _read_json_at(run_fd, RUN_RECORD, os.path.join(results_dir, run_id, RUN_RECORD))
    return record if isinstance(record, dict) else None


@contextmanager
def claimed_host_dir(results_dir: str, run_id: str, host: str, writer: Dict[str, Any]) -> Iterator[int]:
    """A descriptor of the host's directory, which this writer holds (claimed now if free); StoreRefused otherwise."""
    with open_run_dir(results_dir, run_id, create=False) as run_fd:
        name = host_dir_name(host)
        shown = os.path.join(results_dir, run_id, name)
        with _locked(run_fd):
            if entry_kind(run_fd, name) == "link":
                raise StoreRefused("%s is a symbolic link (to %s): this host's results are never written through a "
                                   "link; remove it" % (shown, link_target_at(run_fd, name)))
            host_fd = open_dir_at(run_fd, name, True, shown)
            try:
                _claim(host_fd, host, writer, os.path.join(shown, WRITER_FILE))
            except BaseException:
                os.close(host_fd)
                raise
        try:
            yield host_fd
        finally:
            os.close(host_fd)


def _claim(host_fd: int, host: str, writer: Dict[str, Any], shown: str) -> None:
    holder = _read_json_at(host_fd, WRITER_FILE, shown)
    if isinstance(holder, dict) and holder.get("writer_id") == writer["writer_id"]:
        return
    if isinstance(holder, dict):
        if writer_alive(holder):
            raise StoreRefused("%s's results in this run are being written by another %s; a second writer of one "
                               "host is refused (wait for it, or give this run its own run id)"
                               % (host, describe_writer(holder)))
        if not writer["resume"]:
            raise StoreRefused("%s's results in this run were written by an earlier %s; pass -e %s=true to re-probe "
                               "it in this run" % (host, describe_writer(holder), RESUME_VARIABLE))
    write_bytes_at(host_fd, WRITER_FILE, json_text(writer).encode("utf-8"), shown=shown)


def write_host_inputs(host_fd: int, inputs: Dict[str, Any], shown: str) -> None:
    write_bytes_at(host_fd, INPUTS_FILE, json_text(inputs).encode("utf-8"), shown=shown)


def host_inputs(host: str, run_id: str, writer: Dict[str, Any], profile: str, rule_overrides: Any,
                groups: List[str], python: Optional[str],
                python_choice: Optional[Dict[str, Any]] = None, not_run: Any = None,
                probes: Optional[List[str]] = None) -> Dict[str, Any]:
    """What a later report needs to judge this host exactly as its own run would have; ``python_choice`` is how
    gpufleet.validation.find_python chose the Python when none was given; ``not_run``: {"probes": [...], "why": ...},
    the profile's probes the role did not run on the host (a job runs on its node), judged as such (judge/not_run.py);
    ``probes``, the probes its profile runs (what the profile promises is judged from them, a profile of the user's own
    included)."""
    inputs = {"host": host, "dir_name": host_dir_name(host), "run_id": run_id, "writer_id": writer["writer_id"],
              "profile": profile, "rule_overrides": rule_overrides if isinstance(rule_overrides, dict) else {},
              "groups": list(groups or []), "python": python or ANSIBLE_PYTHON}
    if isinstance(probes, list) and all(isinstance(probe, str) for probe in probes):
        inputs["probes"] = list(probes)
    if python_choice is not None:
        inputs["python_choice"] = python_choice
    if isinstance(not_run, dict) and not_run.get("probes"):
        inputs["not_run"] = {"probes": [str(probe) for probe in not_run["probes"]], "why": str(not_run.get("why") or "")}
    return inputs


def inputs_at(host_fd: int, shown: str) -> Optional[Dict[str, Any]]:
    """The host's inputs.json, or None when there is none or it is not a JSON object."""
    try:
        inputs = _read_json_at(host_fd, INPUTS_FILE, shown)
    except (OSError, StoreRefused):
        return None
    return inputs if isinstance(inputs, dict) else None
