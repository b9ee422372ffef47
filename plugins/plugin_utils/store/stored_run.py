"""Load a run directory into what the report shows: hosts, their envelopes by probe, their state."""
from __future__ import annotations

import errno
import os
import stat
from collections import OrderedDict, abc
from dataclasses import dataclass, field
from typing import Any, Dict, Iterable, Iterator, List, Mapping, Optional, Sequence, Tuple
from urllib.parse import unquote

from ...module_utils.envelope_statuses import ENVELOPE_STATUSES, STATUS_RANK
from ..result_fields import unavailable_fields
from ..unreadable_result import stand_in_envelope, unreadable_reason
from .paths import RUN_LEVEL_DIRS, host_dir_name, is_hashed_dir_name, raw_file_name, result_file_name
from .run_dir import INPUTS_FILE, StoreRefused, run_record
from .safe_fs import DIRECTORY_FLAGS, entry_kind, kind_words, link_target_at
from .read import read_envelope_again, read_envelope_with_identity, read_json_below, result_probes, write_failures
from .results import WRITE_FAILED_MARK

NO_RESULT_REASON = ("no result was written for this host: it was not reached or failed before probing; "
                    "see the ansible-playbook output")
UNGROUPED = "(no group)"


@dataclass
class ProbeEntry:
    """One probe's envelope on one host, or what stands in for it when the file could not be read.

    An entry that load_run read keeps only what the fleet needs (status, reason, unavailable fields, version, start);
    its envelope is read again from the store when it is asked for (a few recent ones are kept), so that a run of
    thousands of hosts is never all in memory at once. The file must still be the one that was loaded: a file
    replaced since (another slice writing into the run) raises EnvelopeChanged, which fails that host, not the run.
    """

    probe: str
    status: str
    reason: str
    held_envelope: Optional[Dict[str, Any]]  # the envelope itself, or None: read from host_path when asked for
    json_file: str
    raw_file: Optional[str]
    unavailable: List[Tuple[str, str]] = field(default_factory=list)
    host_path: str = ""
    identity: Tuple[int, ...] = ()
    collection_version: Optional[str] = None
    started: Any = None
    readable: bool = False  # the envelope is a non-empty object (one that the judge reads)
    # What the judge reads instead of a result that could not be read back (unreadable_result.py); None for the others.
    stand_in: Optional[Dict[str, Any]] = None

    def __post_init__(self) -> None:
        if self.held_envelope:
            self.readable = True
            version = self.held_envelope.get("collection_version")
            self.collection_version = None if version is None else str(version)
            self.started = self.held_envelope.get("started")

    @property
    def envelope(self) -> Dict[str, Any]:
        if self.held_envelope is not None:
            return self.held_envelope
        return _RECENT_ENVELOPES.read(self.host_path, self.probe, self.identity)

    @property
    def data(self) -> Any:
        return self.envelope.get("data", {})

    @property
    def unavailable_count(self) -> int:
        return len(self.unavailable)


class EnvelopeChanged(ValueError):
    """A stored result was replaced after the report had loaded it."""


class _RecentEnvelopes:
    """The last few envelopes read back, so that one host's dossiers and index rows read its results once."""

    KEPT = 16  # more than one host's probes (each a parsed envelope: about 0.5 MiB for a host of 8 GPUs)

    def __init__(self) -> None:
        self._kept: "OrderedDict[Tuple[str, str], Tuple[Tuple[int, ...], Dict[str, Any]]]" = OrderedDict()

    def read(self, host_path: str, probe: str, identity: Tuple[int, ...]) -> Dict[str, Any]:
        key = (host_path, probe)
        found = self._kept.get(key)
        if found is not None and found[0] == identity:
            self._kept.move_to_end(key)
            return found[1]
        try:
            envelope, now = read_envelope_again(host_path, probe, identity)
        except (OSError, ValueError) as exc:
            raise EnvelopeChanged("%s.json of %s could not be read again after this report loaded it: %s"
                                  % (probe, os.path.basename(host_path), exc)) from exc
        if envelope is None:
            raise EnvelopeChanged("%s.json of %s was replaced after this report loaded it (another playbook run writing "
                                  "into this run?); run the report again once it has finished"
                                  % (probe, os.path.basename(host_path)))
        self._kept[key] = (now, envelope)
        while len(self._kept) > self.KEPT:
            self._kept.popitem(last=False)
        return envelope

    def forget(self) -> None:
        self._kept.clear()


_RECENT_ENVELOPES = _RecentEnvelopes()


def forget_recent_envelopes() -> None:
    """Drop the envelopes kept from the last reads (before forking workers: each would otherwise copy their pages)."""
    _RECENT_ENVELOPES.forget()


class StoredEnvelopes(abc.Mapping):
    """{probe: envelope} of a host's readable results, each read back from the store when it is asked for, and the
    stand-in of each result that could not be read (so that the judge makes it an error of that probe)."""

    def __init__(self, entries: Mapping[str, ProbeEntry]) -> None:
        self._entries = {probe: entry for probe, entry in entries.items() if entry.readable or entry.stand_in is not None}

    def __getitem__(self, probe: str) -> Dict[str, Any]:
        entry = self._entries[probe]
        return entry.envelope if entry.readable else entry.stand_in

    def __iter__(self) -> Iterator[str]:
        return iter(self._entries)

    def __len__(self) -> int:
        return len(self._entries)


@dataclass
class HostModel:
    name: str
    dir_name: str
    expected: bool
    groups: List[str]
    probes: Dict[str, ProbeEntry]
    state: str
    reasons: List[str]
    inputs: Dict[str, Any] = field(default_factory=dict)  # inputs.json: what its own run judged it with
    # The fleet index's columns from its health result, kept once worked out (the results themselves are not kept).
    index_columns: Optional[Dict[str, Any]] = None

    @property
    def rank(self) -> int:
        return STATUS_RANK.get(self.state, STATUS_RANK["error"])


@dataclass
class RunModel:
    run_id: str
    run_dir: str
    hosts: List[HostModel]
    # Directories in the run that are not judged, each with why: no stored inputs (a link is a host in error instead).
    stray: List[Dict[str, str]] = field(default_factory=list)
    writers: List[Dict[str, Any]] = field(default_factory=list)  # run.json: the playbook runs that wrote it

    def hosts_worst_first(self) -> List[HostModel]:
        return sorted(self.hosts, key=lambda host: (-host.rank, host.name))

    def counts_by_state(self) -> Dict[str, int]:
        counts = {state: 0 for state in sorted(STATUS_RANK, key=lambda state: -STATUS_RANK[state])}
        for host in self.hosts:
            counts[host.state] = counts.get(host.state, 0) + 1
        return counts

    def groups(self) -> Dict[str, List[HostModel]]:
        by_group: Dict[str, List[HostModel]] = {}
        for host in self.hosts_worst_first():
            for group in host.groups or [UNGROUPED]:
                by_group.setdefault(group, []).append(host)
        return dict(sorted(by_group.items()))

    def collection_versions(self) -> List[str]:
        return sorted({entry.collection_version for host in self.hosts for entry in host.probes.values()
                       if entry.collection_version is not None})


def stored_entry(host_path: str, probe: str, envelope: Dict[str, Any], identity: Tuple[int, ...], status: str = "",
                 reason: str = "", raw_file: Optional[str] = None, unavailable: Sequence[Tuple[str, str]] = ()) -> ProbeEntry:
    """The entry of a result that was read (envelope, from the file of that identity), read back when asked for."""
    version = envelope.get("collection_version")
    return ProbeEntry(probe, status, reason, None, result_file_name(probe), raw_file, list(unavailable), host_path=host_path,
                      identity=identity, collection_version=None if version is None else str(version),
                      started=envelope.get("started"), readable=bool(envelope))


def unreadable_entry(probe: str, reason: str, raw_file: Optional[str] = None) -> ProbeEntry:
    """The entry of a result that could not be read back (or written): an error with the reason, which the dossier shows
    and the judge is handed as a stand-in envelope."""
    return ProbeEntry(probe, "error", reason, {}, result_file_name(probe), raw_file, stand_in=stand_in_envelope(probe, reason))


def read_probe_entry(host_path: str, probe: str) -> ProbeEntry:
    """The probe's entry with what the fleet needs of its envelope; the envelope itself is read again when asked for."""
    try:
        raw_kind = os.lstat(os.path.join(host_path, raw_file_name(probe))).st_mode
    except OSError:
        raw_kind = 0
    raw_file = raw_file_name(probe) if stat.S_ISREG(raw_kind) else None
    shown = os.path.join(os.path.basename(host_path), result_file_name(probe))
    try:
        envelope, identity = read_envelope_with_identity(host_path, probe)
    except (OSError, ValueError) as exc:  # JSONDecodeError and UnicodeDecodeError are ValueErrors
        return unreadable_entry(probe, unreadable_reason(shown, exc), raw_file)
    if not envelope:
        return unreadable_entry(probe, unreadable_reason(shown, "an empty JSON object, not an envelope"), raw_file)
    status = envelope.get("status")
    reason = envelope.get("reason")
    reason = "" if reason is None else str(reason)
    if status not in ENVELOPE_STATUSES:
        reason = "the result has an unknown status %r%s" % (status, "; " + reason if reason else "")
        status = "error"
    return stored_entry(host_path, probe, envelope, identity, status, reason, raw_file, unavailable_fields(envelope.get("data")))


def read_host_probes(host_path: str) -> Dict[str, ProbeEntry]:
    """The host's results, and in place of a result a write failure recorded after it (or with none): the host was
    reached and its probe ran, so it is an error that names the errno, never "not reached"."""
    probes = {probe: read_probe_entry(host_path, probe) for probe in result_probes(host_path)}
    for probe, (error_name, when) in write_failures(host_path, WRITE_FAILED_MARK).items():
        try:
            written = os.lstat(os.path.join(host_path, result_file_name(probe))).st_mtime
        except OSError:
            written = None
        if written is not None and written > when:
            continue  # written again since the failure
        probes[probe] = unreadable_entry(probe, write_failure_reason(probe, error_name, written is not None))
    return probes


def write_failure_reason(probe: str, error_name: str, older_kept: bool) -> str:
    code = getattr(errno, error_name, None)
    text = os.strerror(code) if isinstance(code, int) else "unknown error"
    return ("write failed: %s %s: the host was reached and probe %s ran, but its result could not be stored%s; make "
            "room in the results directory (or make it writable) and probe the host again"
            % (error_name, text, probe, " (an earlier result of this run is kept beside it, not shown)" if older_kept else ""))


def read_host_inputs(host_path: str) -> Tuple[Dict[str, Any], str]:
    """(inputs.json of the host, "") or ({}, why there are none)."""
    try:
        inputs = read_json_below(host_path, INPUTS_FILE)
    except FileNotFoundError:
        return {}, "no %s: no playbook run of this run wrote it" % INPUTS_FILE
    except (OSError, ValueError) as exc:
        return {}, "%s is unreadable: %s" % (INPUTS_FILE, exc)
    if not isinstance(inputs, dict) or not isinstance(inputs.get("host"), str) or not inputs["host"]:
        return {}, "%s names no host" % INPUTS_FILE
    return inputs, ""


def host_state(probes: Mapping[str, ProbeEntry]) -> Tuple[str, List[str]]:
    """unreachable when an envelope says so or there is none; else the worst probe status. Reasons name their probe."""
    if not probes:
        return "unreachable", [NO_RESULT_REASON]
    reasons = ["%s: %s" % (entry.probe, entry.reason or entry.status)
               for entry in probes.values() if entry.status != "ok"]
    if any(entry.status == "unreachable" for entry in probes.values()):
        return "unreachable", reasons
    worst = max(probes.values(), key=lambda entry: STATUS_RANK[entry.status])
    return worst.status, reasons


def entries_on_disk(run_path: str) -> Dict[str, Optional[str]]:
    """The run's entries that could be hosts: name -> None for a directory, or where a link points (never followed)."""
    if not os.path.isdir(run_path):
        return {}
    fd = os.open(run_path, DIRECTORY_FLAGS)
    try:
        kinds = {name: entry_kind(fd, name) for name in os.listdir(fd)
                 if not name.startswith(".") and name not in RUN_LEVEL_DIRS}
        return {name: link_target_at(fd, name) if kind == "link" else None
                for name, kind in sorted(kinds.items()) if kind in ("dir", "link")}
    finally:
        os.close(fd)


def name_of_dir(dir_name: str) -> str:
    """The host a directory is for when nothing in it can be read: host_dir_name writes unsafe bytes as %XX, so
    unquoting gives back the inventory name; a name that was cut and hashed is shown as it is."""
    return dir_name if is_hashed_dir_name(dir_name) else unquote(dir_name)


def _not_a_directory(run_path: str, dir_name: str) -> str:
    """Why an expected host's results directory is not one (a file, a FIFO ... where it should be), or ""."""
    try:
        mode = os.lstat(os.path.join(run_path, dir_name)).st_mode
    except OSError:
        return ""
    if stat.S_ISDIR(mode) or stat.S_ISLNK(mode):
        return ""
    return ("its results directory %s is %s, not a directory: nothing was read from it; move it away and run the host "
            "again" % (os.path.join(os.path.basename(run_path), dir_name), kind_words(mode)))


def _link_reason(run_path: str, dir_name: str, target: str) -> str:
    return ("its results directory %s is a symbolic link (to %s): nothing was read or written through it; remove the "
            "link and run the host again" % (os.path.join(os.path.basename(run_path), dir_name), target))


def load_run(run_path: str, expected_hosts: Iterable[str] = (),
             host_groups: Optional[Mapping[str, Sequence[str]]] = None) -> RunModel:
    """Every expected host, and every host directory on disk that a playbook run of this run wrote (its inputs.json
    names the host), with its probes, state and stored inputs. A run written before run.json existed is read the old
    way: every directory is a host, named by unquoting its directory name. A link where a host's directory would be is
    never followed, and a directory whose inputs.json is there but cannot be read is not judged: each is a host in error
    (named by unquoting the directory's name, or by the name itself where it was cut and hashed), so that it stays in
    every output and the gate refuses it."""
    host_groups = host_groups or {}
    run_path = os.path.abspath(run_path)
    try:
        record = run_record(os.path.dirname(run_path), os.path.basename(run_path)) if os.path.isdir(run_path) else None
    except (StoreRefused, OSError, ValueError):
        record = None
    names_by_dir: Dict[str, str] = {}
    expected_dirs = set()
    for name in expected_hosts:
        dir_name = host_dir_name(name)
        names_by_dir.setdefault(dir_name, name)
        expected_dirs.add(dir_name)
    stray: List[Dict[str, str]] = []
    inputs_by_dir: Dict[str, Dict[str, Any]] = {}
    unjudged: Dict[str, str] = {}  # directory -> why nothing in it is read: a link, not a directory, inputs.json unreadable
    for dir_name, link_target in entries_on_disk(run_path).items():
        if link_target is not None:
            # Nothing is read through it, so the host is known only by its directory's name: an error, never left out.
            unjudged[dir_name] = _link_reason(run_path, dir_name, link_target)
            names_by_dir.setdefault(dir_name, name_of_dir(dir_name))
            continue
        host_path = os.path.join(run_path, dir_name)
        inputs, why = read_host_inputs(host_path)
        if inputs:
            inputs_by_dir[dir_name] = inputs
            names_by_dir[dir_name] = inputs["host"] if dir_name not in expected_dirs else names_by_dir[dir_name]
        elif os.path.lexists(os.path.join(host_path, INPUTS_FILE)):
            # Only the store writes it: a host's directory whose inputs cannot be read is that host's error.
            unjudged[dir_name] = ("its results are not judged: %s (the store wrote it with the rule overrides and groups "
                                  "its run judged the host with); probe the host again in a new run" % why)
            names_by_dir.setdefault(dir_name, name_of_dir(dir_name))
        elif dir_name in expected_dirs:
            continue
        elif record is not None or is_hashed_dir_name(dir_name):
            stray.append({"dir": dir_name, "why": "not judged: %s" % why})
        else:
            names_by_dir.setdefault(dir_name, name_of_dir(dir_name))

    for dir_name in expected_dirs - set(unjudged) - set(inputs_by_dir):
        not_a_dir = _not_a_directory(run_path, dir_name)
        if not_a_dir:
            unjudged[dir_name] = not_a_dir

    hosts = []
    for dir_name, name in names_by_dir.items():
        host_path = os.path.join(run_path, dir_name)
        inputs = inputs_by_dir.get(dir_name, {})
        if dir_name in unjudged:
            probes, state, reasons = {}, "error", [unjudged[dir_name]]
        else:
            probes = read_host_probes(host_path)
            state, reasons = host_state(probes)
        groups = host_groups.get(name) or inputs.get("groups") or ()
        hosts.append(HostModel(name=name, dir_name=dir_name, expected=dir_name in expected_dirs,
                               groups=[str(group) for group in groups], probes=probes, state=state, reasons=reasons,
                               inputs=inputs))
    hosts.sort(key=lambda host: host.name)
    return RunModel(run_id=os.path.basename(run_path), run_dir=run_path, hosts=hosts, stray=stray,
                    writers=list((record or {}).get("writers") or []))
