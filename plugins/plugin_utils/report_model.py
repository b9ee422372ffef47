"""Load a run directory into what the report shows: hosts, their envelopes by probe, their state."""
from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from typing import Any, Dict, Iterable, List, Mapping, Optional, Sequence, Tuple
from urllib.parse import unquote

from .report_values import unavailable_fields
from .result_paths import PROBE_NAME_PATTERN, host_dir_name

# Worse states rank higher; error and timeout are equally bad.
STATE_RANK = {"ok": 0, "unavailable": 1, "partial": 2, "timeout": 3, "error": 3, "unreachable": 4}
PROBE_STATUSES = ("ok", "partial", "unavailable", "error", "timeout", "unreachable")
NO_RESULT_REASON = ("no result was written for this host: it was not reached or failed before probing; "
                    "see the ansible-playbook output")
UNGROUPED = "(no group)"


@dataclass
class ProbeEntry:
    """One probe's envelope on one host, or what stands in for it when the file could not be read."""

    probe: str
    status: str
    reason: str
    envelope: Dict[str, Any]
    json_file: str
    raw_file: Optional[str]
    unavailable: List[Tuple[str, str]] = field(default_factory=list)

    @property
    def data(self) -> Any:
        return self.envelope.get("data", {})

    @property
    def unavailable_count(self) -> int:
        return len(self.unavailable)


@dataclass
class HostModel:
    name: str
    dir_name: str
    expected: bool
    groups: List[str]
    probes: Dict[str, ProbeEntry]
    state: str
    reasons: List[str]

    @property
    def rank(self) -> int:
        return STATE_RANK.get(self.state, STATE_RANK["error"])


@dataclass
class RunModel:
    run_id: str
    run_dir: str
    hosts: List[HostModel]

    def hosts_worst_first(self) -> List[HostModel]:
        return sorted(self.hosts, key=lambda host: (-host.rank, host.name))

    def counts_by_state(self) -> Dict[str, int]:
        counts = {state: 0 for state in sorted(STATE_RANK, key=lambda state: -STATE_RANK[state])}
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
        return sorted({str(entry.envelope["collection_version"]) for host in self.hosts
                       for entry in host.probes.values() if "collection_version" in entry.envelope})


def read_probe_entry(host_path: str, probe: str) -> ProbeEntry:
    json_file = probe + ".json"
    raw_file = probe + ".raw" if os.path.isfile(os.path.join(host_path, probe + ".raw")) else None
    try:
        with open(os.path.join(host_path, json_file), encoding="utf-8") as handle:
            envelope = json.load(handle)
        if not isinstance(envelope, dict):
            raise ValueError("the file holds a JSON %s, not an object" % type(envelope).__name__)
    except (OSError, ValueError) as exc:  # JSONDecodeError and UnicodeDecodeError are ValueErrors
        return ProbeEntry(probe, "error", "result file unreadable: %s" % exc, {}, json_file, raw_file)
    status = envelope.get("status")
    reason = envelope.get("reason")
    reason = "" if reason is None else str(reason)
    if status not in PROBE_STATUSES:
        reason = "the result has an unknown status %r%s" % (status, "; " + reason if reason else "")
        status = "error"
    return ProbeEntry(probe, status, reason, envelope, json_file, raw_file, unavailable_fields(envelope.get("data")))


def read_host_probes(host_path: str) -> Dict[str, ProbeEntry]:
    if not os.path.isdir(host_path):
        return {}
    probes = {}
    for name in sorted(os.listdir(host_path)):
        probe, extension = os.path.splitext(name)
        if extension == ".json" and PROBE_NAME_PATTERN.match(probe):
            probes[probe] = read_probe_entry(host_path, probe)
    return probes


def host_state(probes: Mapping[str, ProbeEntry]) -> Tuple[str, List[str]]:
    """unreachable when an envelope says so or there is none; else the worst probe status. Reasons name their probe."""
    if not probes:
        return "unreachable", [NO_RESULT_REASON]
    reasons = ["%s: %s" % (entry.probe, entry.reason or entry.status)
               for entry in probes.values() if entry.status != "ok"]
    if any(entry.status == "unreachable" for entry in probes.values()):
        return "unreachable", reasons
    worst = max(probes.values(), key=lambda entry: STATE_RANK[entry.status])
    return worst.status, reasons


def _host_dirs_on_disk(run_path: str) -> List[str]:
    """Host directories in the run; links are not followed, so that nothing outside the run is read or written."""
    if not os.path.isdir(run_path):
        return []
    with os.scandir(run_path) as entries:
        return sorted(entry.name for entry in entries
                      if not entry.name.startswith(".") and entry.is_dir(follow_symlinks=False))


def load_run(run_path: str, expected_hosts: Iterable[str] = (),
             host_groups: Optional[Mapping[str, Sequence[str]]] = None) -> RunModel:
    """Every expected host, and every host directory found on disk, with its probes and state."""
    host_groups = host_groups or {}
    run_path = os.path.abspath(run_path)
    names_by_dir: Dict[str, str] = {}
    expected_dirs = set()
    for name in expected_hosts:
        dir_name = host_dir_name(name)
        names_by_dir.setdefault(dir_name, name)
        expected_dirs.add(dir_name)
    for dir_name in _host_dirs_on_disk(run_path):
        # host_dir_name writes unsafe bytes as %XX, so unquoting gives back the inventory name.
        names_by_dir.setdefault(dir_name, unquote(dir_name))

    hosts = []
    for dir_name, name in names_by_dir.items():
        host_path = os.path.join(run_path, dir_name)
        probes = read_host_probes(host_path) if not os.path.islink(host_path) else {}
        state, reasons = host_state(probes)
        hosts.append(HostModel(name=name, dir_name=dir_name, expected=dir_name in expected_dirs,
                               groups=[str(group) for group in host_groups.get(name, ())],
                               probes=probes, state=state, reasons=reasons))
    hosts.sort(key=lambda host: host.name)
    return RunModel(run_id=os.path.basename(run_path), run_dir=run_path, hosts=hosts)
