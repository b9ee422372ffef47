"""Which host last reported each GPU in the earlier runs of a results directory (issue 45): a host whose GPUs another
host reported last is a GPU moved between machines, or a result copied from that host.

Runs are read newest first (previous.earlier_runs), and only the probe that describes the machine in each host's
directory; the search stops as soon as every GPU asked about was found, so a steady fleet reads one earlier run. A GPU
no earlier run reported (new nodes) is looked for in at most MAX_RUNS runs.
"""
from __future__ import annotations

import os
from typing import Callable, Dict, Iterable, List, Optional, Sequence, Set, Tuple

from .paths import is_hashed_dir_name
from .read import read_envelope
from .stored_run import entries_on_disk, name_of_dir

MAX_RUNS = 50
# identities_of(envelope) -> the GPU identities the describing probe's envelope reports (judge/identity_checks.py)
IdentitiesOf = Callable[[dict], Set[str]]


class ReportedGpus:
    """The GPUs each earlier result of the describing probe reported, by run and host directory.

    The report reads the previous runs' results once: note is find_previous_results' on_read, and what it notes of
    each describing result (its host, its GPU identities; never the envelope, so that a fleet's earlier results are
    not all kept) is not read again by last_reporters. A result it was not told of is read here.
    """

    def __init__(self, probe: str, identities_of: IdentitiesOf) -> None:
        self.probe, self.identities_of = probe, identities_of
        # {(run id, host directory): (host, GPU identities)}; plain data, so that a worker's notes can be sent back
        self.noted: Dict[Tuple[str, str], Tuple[str, Set[str]]] = {}

    def note(self, run_id: str, dir_name: str, probe: str, envelope: dict) -> None:
        if probe == self.probe:
            self.noted[(run_id, dir_name)] = (_host_name(dir_name, envelope), self.identities_of(envelope))

    def last_reporters(self, results_dir: str, runs: Sequence[str], wanted: Iterable[str],
                       max_runs: int = MAX_RUNS) -> Dict[str, Tuple[Tuple[str, ...], str]]:
        """{identity: (the hosts, run id)} of the newest of runs (earlier_runs of the run judged, newest first) that
        reported each wanted GPU identity, with every host of that run that reported it (aliases of one machine report
        the same GPUs)."""
        remaining = set(wanted)
        found: Dict[str, Tuple[Tuple[str, ...], str]] = {}
        for earlier in runs[:max_runs]:
            if not remaining:
                break
            run_path = os.path.join(os.path.abspath(results_dir), earlier)
            reporters: Dict[str, List[str]] = {}
            for dir_name in _host_dirs(run_path):
                reported = self._reported(run_path, earlier, dir_name)
                if reported is None:
                    continue
                host, identities = reported
                for identity in identities & remaining:
                    reporters.setdefault(identity, []).append(host)
            for identity, hosts in reporters.items():
                found[identity] = (tuple(sorted(set(hosts))), earlier)
            remaining -= set(reporters)
        return found

    def _reported(self, run_path: str, run_id: str, dir_name: str) -> Optional[Tuple[str, Set[str]]]:
        """(host, GPU identities) of the host directory's describing result; None where it cannot be read."""
        noted = self.noted.get((run_id, dir_name))
        if noted is not None:
            return noted
        envelope = _envelope(os.path.join(run_path, dir_name), self.probe)
        if envelope is None:
            return None
        return _host_name(dir_name, envelope), self.identities_of(envelope)


def _host_name(dir_name: str, envelope: dict) -> str:
    """The inventory name of a host directory (stored_run.name_of_dir); for a name that needed hashing, the one the
    store wrote into the envelope."""
    if is_hashed_dir_name(dir_name) and isinstance(envelope.get("host"), str) and envelope.get("host"):
        return envelope["host"]
    return name_of_dir(dir_name)


def _host_dirs(run_path: str) -> List[str]:
    """The run's host directories as the report lists them (stored_run.entries_on_disk), links left out."""
    try:
        return [name for name, link_target in entries_on_disk(run_path).items() if link_target is None]
    except OSError:
        return []


def _envelope(host_path: str, probe: str) -> Optional[dict]:
    try:
        envelope = read_envelope(host_path, probe)
    except (OSError, ValueError):
        return None
    return envelope if isinstance(envelope, dict) else None
