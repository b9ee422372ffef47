"""Find each host's previous result: the newest earlier run in the results directory that holds the host, and for a probe
that run did not measure, the newest earlier run that did."""
from __future__ import annotations

import errno
import os
import stat
from dataclasses import dataclass, field
from typing import Callable, Dict, Iterable, List, Mapping, Optional, Sequence, Set, Tuple

from ...module_utils.envelope_statuses import MEASURED_STATUSES
from ...module_utils.python_discovery import import_proof
from .paths import host_dir_name, result_file_name
from .read import read_envelope_with_identity, result_probes
from .run_order import runs_newest_first
from .stored_run import ProbeEntry, StoredEnvelopes, read_host_inputs, stored_entry

EnvelopeCheck = Callable[[dict], List[str]]
# on_read(earlier run id, host directory, probe, envelope): told of every earlier result read (store/earlier_gpus.py)
ReadWatcher = Callable[[str, str, str, dict], None]


def earlier_runs(results_dir: str, run_id: str) -> List[str]:
    """Run ids other than ``run_id``, newest first by the order the controller opened them (store/run_order.py); links,
    odd names and ``latest`` are skipped."""
    return runs_newest_first(results_dir, before=run_id)


@dataclass
class PreviousResults:
    """Each host's earlier results: its envelopes, its previous run's id, and the results of it that cannot be compared.

    A host's previous run is its newest earlier run that measured something; a probe that run did not measure comes from
    the newest earlier run that did (each envelope carries its own run_id), when the caller says which probes it wants.
    A host's envelopes are read back from the store when asked for (StoredEnvelopes), so that the earlier results of a
    fleet of thousands are never all in memory at once.
    """

    envelopes: Dict[str, Mapping[str, dict]] = field(default_factory=dict)
    run_ids: Dict[str, str] = field(default_factory=dict)
    # host -> probe -> why that earlier result is not compared, e.g. "previous run's health.json is unreadable: ..."
    problems: Dict[str, Dict[str, str]] = field(default_factory=dict)


def unreadable_why(path: str) -> Optional[str]:
    """Why a directory of an earlier run cannot be read, or None (also when it is not there). A directory whose mode
    grants no one read (chmod 000) was made unreadable on purpose: it is not read even by root, who could."""
    try:
        mode = os.lstat(path).st_mode
    except FileNotFoundError:
        return None
    except OSError as exc:
        return "%s (%s) on %s" % (errno.errorcode.get(exc.errno, exc.errno), exc.strerror, path)
    if not stat.S_ISDIR(mode):
        return None
    if not mode & 0o444:
        return "%s has mode %03o: made unreadable on purpose, so it is not read (not even by root)" % (
            path, stat.S_IMODE(mode))
    if not os.access(path, os.R_OK | os.X_OK):
        return "EACCES (%s) on %s" % (os.strerror(errno.EACCES), path)
    return None


def _unreadable_sentence(run_id: str, why: str) -> str:
    return "the earlier run %s is unreadable: %s; drift is not compared with it, nor with an older run" % (run_id, why)


def _is_result_file(host_path: str, probe: str) -> bool:
    try:
        return stat.S_ISREG(os.lstat(os.path.join(host_path, result_file_name(probe))).st_mode)
    except OSError:
        return False


def _read_results(host_path: str, run_id: str, probes: Iterable[str], check_envelope: Optional[EnvelopeCheck],
                  on_read: Optional[ReadWatcher] = None) -> Tuple[Dict[str, ProbeEntry], Set[str], Dict[str, str]]:
    """(entries of the readable, sound results of these probes, the probes among them that measured something, the
    problems of those that cannot be compared); on_read is told of each envelope read."""
    entries: Dict[str, ProbeEntry] = {}
    measured: Set[str] = set()
    problems: Dict[str, str] = {}
    for probe in probes:
        name = result_file_name(probe)
        try:
            envelope, identity = read_envelope_with_identity(host_path, probe)
        except (OSError, ValueError) as exc:  # JSONDecodeError and UnicodeDecodeError are ValueErrors
            problems[probe] = "previous run's %s is unreadable: %s (run %s)" % (name, exc, run_id)
            continue
        if on_read is not None:
            on_read(run_id, os.path.basename(host_path), probe, envelope)
        if envelope.get("status") == "unreachable":
            continue
        broken = check_envelope(envelope) if check_envelope is not None else []
        if broken:
            problems[probe] = "previous run's %s breaks its schema: %s (run %s)" % (name, "; ".join(broken[:3]), run_id)
            continue
        entries[probe] = stored_entry(host_path, probe, envelope, identity)
        if envelope.get("status") in MEASURED_STATUSES:
            measured.add(probe)
    return entries, measured, problems


def find_previous_results(results_dir: str, run_id: str, hosts: Iterable[str], max_runs: int = 400,
                          check_envelope: Optional[EnvelopeCheck] = None,
                          wanted: Optional[Mapping[str, Iterable[str]]] = None, describing: str = "",
                          runs: Optional[Sequence[str]] = None, on_read: Optional[ReadWatcher] = None) -> PreviousResults:
    """For each host, the newest earlier run where a probe of it measured something or left an unreadable result.

    wanted: {host: probes this run measured}. A wanted probe that the host's previous run did not measure is taken from
    the newest earlier run that did (or left it unreadable), so that a post_upgrade run after a health run compares its
    membw with the last run that measured membw. Looking further back costs one lstat per run for each probe still
    missing, only for hosts that still miss one.

    describing: the probe that describes the machine (the caller's catalogue.machine_probe; "" when none does): where an
    earlier run cannot be read, a host that wanted nothing has that probe's problem say why.

    check_envelope(envelope) -> problem sentences (empty when sound), e.g. schemas.envelope_problems: an
    envelope with problems is reported, not compared. Looks at no more than ``max_runs`` earlier runs, so that a
    years-old results directory stays cheap.

    An earlier run whose directory cannot be read (unreadable_why: EACCES, or mode 000 even for root) may hold any
    host: every host still looked for takes it as its previous run, with the wanted probes' problem saying why, and
    no older run is read. A host directory that cannot be read or listed does the same for that host.

    runs: earlier_runs(results_dir, run_id), where the caller has listed them already. on_read(earlier run id, host
    directory, probe, envelope) is told of every earlier result read (parsed into a JSON object), so that a caller that
    needs something else of these results does not parse them again (store/earlier_gpus.ReportedGpus).
    """
    found = PreviousResults()
    pending = {host: host_dir_name(host) for host in hosts}
    entries: Dict[str, Dict[str, ProbeEntry]] = {}
    # host -> (its folder, the wanted probes its previous run did not measure, still looked for)
    missing: Dict[str, Tuple[str, Set[str]]] = {}
    root = os.path.abspath(results_dir)

    def stop_at_unreadable(host: str, probes: Iterable[str], earlier: str, why: str) -> None:
        """An earlier run that cannot be read may hold the host: drift says so instead of looking further back."""
        found.problems.setdefault(host, {}).update({probe: _unreadable_sentence(earlier, why) for probe in probes})

    def wanted_probes(host: str) -> Set[str]:
        return set((wanted or {}).get(host) or ()) or ({describing} if describing else set())

    for earlier in (earlier_runs(results_dir, run_id) if runs is None else runs)[:max_runs]:
        if not pending and not missing:
            break
        run_why = unreadable_why(os.path.join(root, earlier))
        if run_why is not None:
            for host, (unused_dir, probes) in missing.items():
                stop_at_unreadable(host, probes, earlier, run_why)
            for host in pending:
                entries[host] = {}
                found.run_ids[host] = earlier
                stop_at_unreadable(host, wanted_probes(host), earlier, run_why)
            pending, missing = {}, {}
            break
        for host, (dir_name, probes) in list(missing.items()):
            host_path = os.path.join(root, earlier, dir_name)
            host_why = unreadable_why(host_path)
            if host_why is not None and not os.path.islink(host_path):
                stop_at_unreadable(host, probes, earlier, host_why)
                del missing[host]
                continue
            present = [probe for probe in probes if _is_result_file(host_path, probe)]
            if not present or os.path.islink(host_path):
                continue
            older, measured, problems = _read_results(host_path, earlier, present, check_envelope, on_read)
            for probe in measured:
                entries[host][probe] = older[probe]
            if problems:
                found.problems.setdefault(host, {}).update(problems)
            probes -= measured | set(problems)
            if not probes:
                del missing[host]
        for host, dir_name in list(pending.items()):
            host_path = os.path.join(root, earlier, dir_name)
            if os.path.islink(host_path) or not os.path.isdir(host_path):
                continue
            try:
                why = unreadable_why(host_path)
                probes = result_probes(host_path) if why is None else []
            except OSError as exc:
                why = "%s (%s) on %s" % (errno.errorcode.get(exc.errno or 0, exc.errno), exc.strerror, host_path)
            if why is not None:
                entries[host] = {}
                found.run_ids[host] = earlier
                stop_at_unreadable(host, wanted_probes(host), earlier, why)
                del pending[host]
                continue
            host_entries, measured, problems = _read_results(host_path, earlier, probes, check_envelope, on_read)
            # Drift needs something measured: a run where every probe failed or was unavailable is passed over, but
            # not one whose results cannot be read (that is said on the drift checks instead of comparing with an
            # older run).
            if not measured and not problems:
                continue
            entries[host] = host_entries
            found.run_ids[host] = earlier
            if problems:
                found.problems[host] = problems
            del pending[host]
            still = set((wanted or {}).get(host) or ()) - measured - set(problems)
            if still:
                missing[host] = (dir_name, still)
    for host, host_entries in entries.items():
        found.envelopes[host] = StoredEnvelopes(host_entries)
    return found


def previous_results(results_dir: str, run_id: str, hosts: Iterable[str],
                     max_runs: int = 400) -> Tuple[Dict[str, Dict[str, dict]], Dict[str, str]]:
    """(envelopes, run ids) of find_previous_results, without schema checks."""
    found = find_previous_results(results_dir, run_id, hosts, max_runs)
    return {host: envelopes for host, envelopes in found.envelopes.items() if envelopes}, found.run_ids


def most_common_run(run_ids: Dict[str, str]) -> Optional[str]:
    counts: Dict[str, int] = {}
    for run in run_ids.values():
        counts[run] = counts.get(run, 0) + 1
    return max(sorted(counts), key=lambda run: counts[run]) if counts else None


def previous_python_proof(results_dir: str, run_id: str, host: str, max_runs: int = 400) -> Optional[dict]:
    """The torch import proof (python_discovery.import_proof) of the host's newest earlier run that recorded its
    inputs: the Python discovery of this run may reuse it; None when that run chose no Python by discovery."""
    dir_name = host_dir_name(host)
    for earlier in earlier_runs(results_dir, run_id)[:max_runs]:
        host_path = os.path.join(os.path.abspath(results_dir), earlier, dir_name)
        if os.path.islink(host_path) or not os.path.isdir(host_path):
            continue
        inputs, unused_why = read_host_inputs(host_path)
        if inputs:
            return import_proof(inputs.get("python_choice"), earlier)
    return None
