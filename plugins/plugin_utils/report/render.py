"""Write a run's report: every host's dossiers and outcome (over the cores, a host at a time), then the fleet index
and, where the run was judged, the fleet exports (fleet.json, junit.xml, gpufleet.prom)."""
from __future__ import annotations

import dataclasses
import os
import time
from typing import Any, Callable, Dict, Iterable, List, Mapping, Optional, Sequence, Tuple

from ..act.outcome import host_outcome
from ..judge.model import FleetJudgement, HostVerdict, blocks_gate, error_verdict
from ..store.atomic import Text
from ..store.paths import (DOSSIER_HTML_FILE, DOSSIER_MD_FILE, FLEET_EXPORT_FILES, FLEET_INDEX_FILES, HOST_REPORT_FILES,
                           MEASUREMENTS_HTML_FILE, MEASUREMENTS_MD_FILE, OUTCOMES_DIR, outcome_file_name)
from ..store.stored_run import HostModel, RunModel, forget_recent_envelopes, load_run
from .exports import export_json_text, fleet_json_chunks, junit_chunks, prometheus_chunks, run_timestamp
from .host_pages import (render_host_dossier_html, render_host_dossier_markdown, render_host_measurements_html,
                         render_host_measurements_markdown)
from .index_page import groups_of, host_summary, judged_row, render_fleet_index_html, render_fleet_index_markdown
from .markup import compile_templates
from .parallel import FRESH_FORK_ITEMS, run_large_jobs_over_the_cores, run_over_the_cores, worker_count
from .verdicts import metric_columns, root_actions


def _inside(root: str, path: str) -> bool:
    root_real, path_real = os.path.realpath(root), os.path.realpath(path)
    return os.path.commonpath([root_real, path_real]) == root_real and path_real != root_real


# Measured on 2 cores (docs/scale.md, "Issue 18, fourth part"): the fleet outputs side by side took 2.5-3.4 s instead of
# 4.2-5.5 s at 1,000 hosts, for about 30 MiB more; at 10,000 hosts 35 s instead of 40, for 160 MiB more (2,034 MiB at
# the peak, against the 2 GiB bound). Between the two the seconds saved shrink as the memory grows.
FLEET_OUTPUTS_FORKED_UP_TO_HOSTS = 4000
EXPORT_FILES = FLEET_EXPORT_FILES


def render_fleet_outputs(run: RunModel, write: Callable[[str, Text], None], judgement: Optional[FleetJudgement] = None,
                         previous_run_id: Optional[str] = None, processes: int = 1, gated: bool = True) -> None:
    """The fleet-level files: index.html and index.md; with a judgement fleet.json, junit.xml and gpufleet.prom.

    Each is rendered and written on its own, so that one that fails does not keep the others from being written;
    raises ValueError naming every one that failed, after writing the rest. The exports are handed to write as chunks
    (a host at a time): the checks of 10,000 hosts as one text, or one element tree, would take gigabytes.

    processes: forked processes that render them side by side (report_parallel), for a run large enough that each
    takes seconds; write must then work from a forked process (write a file, not fill the caller's memory).
    gated: whether the run enforces its gate, which junit.xml follows (exports.junit_chunks).
    """
    # Named from store.paths, which keeps every host's directory off these names.
    outputs: List[Tuple[str, Callable[[], Text]]] = list(zip(FLEET_INDEX_FILES, (
        lambda: render_fleet_index_html(run, judgement, previous_run_id),
        lambda: render_fleet_index_markdown(run, judgement, previous_run_id))))
    if judgement is not None:
        outputs += list(zip(FLEET_EXPORT_FILES, (
            lambda: fleet_json_chunks(judgement, run),
            lambda: junit_chunks(judgement, gated, run),
            lambda: prometheus_chunks(judgement, run, run_timestamp(run)))))

    def one_output(position: int) -> Optional[str]:
        name, render = outputs[position]
        try:
            write(os.path.join(run.run_dir, name), render())
            return None
        except Exception as exc:  # pylint: disable=broad-exception-caught
            return "%s: %s: %s" % (name, type(exc).__name__, exc)

    outcomes = run_large_jobs_over_the_cores(len(outputs), one_output, processes)
    failed = [outcomes[position] for position in range(len(outputs)) if outcomes[position] is not None]
    if failed:
        raise ValueError("could not write %s" % "; ".join(failed))


def _host_outputs(host: HostModel, run: RunModel, judgement: Optional[FleetJudgement],
                  metrics: List[Dict[str, str]]) -> List[Tuple[str, str]]:
    """(file name, text) of the host's dossiers, after building its fleet-index row, which must render too (the
    Markdown row: it is built from the same calls as the HTML one, and more)."""
    if judgement is not None:
        judged_row(host, judgement, metrics, markdown=True)
    else:
        host_summary(host, markdown=True)
    # One format after the other: the second page of a format finds the rows and views the first computed.
    return [(DOSSIER_HTML_FILE, render_host_dossier_html(host, run, judgement)),
            (MEASUREMENTS_HTML_FILE, render_host_measurements_html(host, run, judgement)),
            (DOSSIER_MD_FILE, render_host_dossier_markdown(host, run, judgement)),
            (MEASUREMENTS_MD_FILE, render_host_measurements_markdown(host, run, judgement))]


def _without_results(host: HostModel, reason: str) -> HostModel:
    """The host as the report shows it when its results broke the rendering: in error, its probes not shown."""
    return dataclasses.replace(host, probes={}, state="error", reasons=[reason], index_columns=None)


def _write_host(host: HostModel, host_path: str, run: RunModel, judgement: Optional[FleetJudgement],
                metrics: List[Dict[str, str]], write: Callable[[str, str], None]) -> Optional[HostModel]:
    """Render and write one host's dossiers; on any exception the host stands in error (returned) and the rest go on."""
    try:
        for name, text in _host_outputs(host, run, judgement, metrics):
            write(os.path.join(host_path, name), text)
        return None
    except Exception as exc:  # pylint: disable=broad-exception-caught
        failure = exc
    reason = "rendering this host's report raised %s: %s; its results are kept in %s/" % (
        type(failure).__name__, failure, host.dir_name)
    stand_in = _without_results(host, reason)
    if judgement is not None:
        judgement.hosts[host.name] = error_verdict(host.name, "host.rendered", reason,
                                                   groups_of(host, judgement.hosts.get(host.name)))
    try:
        for name, text in _host_outputs(stand_in, run, judgement, metrics):
            write(os.path.join(host_path, name), text)
    except Exception:  # pylint: disable=broad-exception-caught
        pass  # Its directory cannot be written at all (e.g. a name too long): the fleet outputs still say why.
    return stand_in


def run_started(run: RunModel) -> str:
    """When the run started, ISO 8601 UTC: its first playbook run's start on the controller (run.json), else from the
    run id or the probes (exports.run_timestamp)."""
    starts = sorted(str(writer.get("started")) for writer in run.writers
                    if isinstance(writer, Mapping) and isinstance(writer.get("started"), str) and writer.get("started"))
    return starts[0] if starts else time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(run_timestamp(run)))


def _write_outcome(run: RunModel, host: HostModel, judgement: FleetJudgement, started: str,
                   write: Callable[[str, str], None]) -> Optional[str]:
    """Write the host's outcome (act/outcome.py: its verdict and root cause, nothing acted on yet); why not, or None."""
    verdict = judgement.hosts.get(host.name)
    if verdict is None:
        return None
    document = host_outcome(judgement.run_id, started, host.name, verdict.verdict, verdict.reasons, blocks_gate(verdict),
                            "%s/%s" % (host.dir_name, DOSSIER_HTML_FILE), root_actions(verdict, judgement.texts))
    try:
        write(os.path.join(run.run_dir, OUTCOMES_DIR, outcome_file_name(host.name)), export_json_text(document))
        return None
    except Exception as exc:  # pylint: disable=broad-exception-caught
        return "the outcome of %s: %s: %s" % (host.name, type(exc).__name__, exc)


def render_run(run_dir: str, expected_hosts: Iterable[str], host_groups: Optional[Mapping[str, Sequence[str]]],
               write: Callable[[str, Text], None], judgement: Optional[FleetJudgement] = None,
               previous_run_id: Optional[str] = None, loaded: Optional[RunModel] = None,
               workers: Optional[int] = None, gated: bool = True) -> RunModel:
    """Render every dossier and the fleet index, write(path, text) each, and return the run as loaded.

    workers: processes that render the dossiers (default: one per usable core, for runs large enough; report_parallel).
    gated: whether the run enforces its gate (gpufleet_gate): the pages and fleet.json say so, and junit.xml then fails a
    warn host the gate refuses.

    loaded: the run as the caller already read it (load_run with the same hosts, every judged host among them),
    so that the results are not read from disk a second time.

    Paths: <run_dir>/<host.dir_name>/dossier.html and .md, and measurements.html and .md (every value of its results),
    for every host of the returned run; <run_dir>/index.html and .md; with a judgement also <run_dir>/fleet.json,
    junit.xml and gpufleet.prom, and each judged host's outcome, <run_dir>/outcomes/<host.dir_name>.json (written
    beside its dossier, over the cores). A judged host that has no results on disk is rendered too (as a host without results);
    previous_run_id, when given, overrides judgement.previous_run_id.

    A host whose dossier or index row raises while rendered or written is shown in error with the exception (its
    entry in run.hosts and in judgement.hosts is replaced, so the caller sees it too) and every other host and the
    fleet outputs are still written. A host whose directory is a link gets no dossier. Raises ValueError, before
    writing anything, if a path would resolve outside run_dir, and after writing the rest if a fleet output could not
    be written (a host's outcome too).
    """
    expected, groups = list(expected_hosts), dict(host_groups or {})
    if judgement is not None:
        judgement = _judgement_for_the_run(judgement, expected, groups, previous_run_id, gated)
    run = loaded if loaded is not None else load_run(run_dir, expected, groups)
    dossiers = _dossier_places(run, judgement)
    unwritten = _write_hosts(run, dossiers, judgement, write, workers)
    # The fleet outputs side by side where the dossiers were rendered so (a large run): each then takes seconds. Not
    # past FLEET_OUTPUTS_FORKED_UP_TO_HOSTS, where each forked process's copy of the pages it touches costs more memory
    # than the seconds are worth.
    processes = worker_count(len(dossiers), workers) if len(dossiers) <= FLEET_OUTPUTS_FORKED_UP_TO_HOSTS else 1
    render_fleet_outputs(run, write, judgement, previous_run_id, processes=processes, gated=gated)
    if unwritten:
        raise ValueError("could not write %s" % "; ".join(unwritten))
    return run


def _judgement_for_the_run(judgement: FleetJudgement, expected: List[str], groups: Dict[str, List[str]],
                           previous_run_id: Optional[str], gated: bool) -> FleetJudgement:
    """The judgement as the run's pages show it (its earlier run, its gate); every judged host added to expected, and
    its groups to groups where the inventory gave it none."""
    if previous_run_id is not None and previous_run_id != judgement.previous_run_id:
        judgement = dataclasses.replace(judgement, previous_run_id=previous_run_id)
    judgement.gate_enforced = gated
    known = set(expected)
    expected += sorted(name for name in judgement.hosts if name not in known)
    for name, verdict in judgement.hosts.items():
        if not groups.get(name) and verdict.groups:
            groups[name] = list(verdict.groups)
    return judgement


def _dossier_places(run: RunModel, judgement: Optional[FleetJudgement]) -> List[Tuple[HostModel, str]]:
    """(host, its directory) of every host that gets dossiers; raises ValueError if a path of the report would resolve
    outside the run directory."""
    # A host whose directory is a link gets no dossier (nothing is written through a link); the index says why.
    dossiers = [(host, os.path.join(run.run_dir, host.dir_name)) for host in run.hosts
                if not os.path.islink(os.path.join(run.run_dir, host.dir_name))]
    fleet_paths = [os.path.join(run.run_dir, name) for name in FLEET_INDEX_FILES]
    if judgement is not None:
        fleet_paths += [os.path.join(run.run_dir, name) for name in EXPORT_FILES]
    for path in [os.path.join(host_path, name) for unused_host, host_path in dossiers for name in HOST_REPORT_FILES] + fleet_paths:
        if not _inside(run.run_dir, path):
            raise ValueError("refusing to write %s: it resolves outside the run directory %s" % (path, run.run_dir))
    return dossiers


def _write_hosts(run: RunModel, dossiers: List[Tuple[HostModel, str]], judgement: Optional[FleetJudgement],
                 write: Callable[[str, Text], None], workers: Optional[int]) -> List[str]:
    """Write every host's dossiers and outcome; a host whose rendering failed is replaced by its stand-in in run.hosts,
    dossiers and judgement.hosts. Returns why each outcome that could not be written was not."""
    # Rendered and written one host at a time (over the controller's cores), so that a fleet of thousands never holds
    # every dossier in memory, and one host whose results break the rendering is shown in error while every other
    # host is reported.
    metrics = metric_columns(judgement) if judgement is not None else []
    started = run_started(run)

    def one_host(position: int) -> Tuple[Optional[Dict[str, Any]], Optional[Tuple[HostModel, Optional[HostVerdict]]],
                                         Optional[str]]:
        """(the host's index columns, worked out here, where its results are read anyway; its stand-in and verdict if
        its rendering failed; why its outcome was not written)."""
        host, host_path = dossiers[position]
        stand_in = _write_host(host, host_path, run, judgement, metrics, write)
        unwritten = _write_outcome(run, host, judgement, started, write) if judgement is not None else None
        if stand_in is None:
            return host.index_columns, None, unwritten
        return stand_in.index_columns, (stand_in, judgement.hosts.get(host.name) if judgement is not None else None), unwritten

    forget_recent_envelopes()
    if worker_count(len(dossiers), workers) > 1:
        compile_templates()
    # A fresh fork now and then: each dossier reads its host's part of the judged run, which the worker then holds a copy of.
    outcomes = run_over_the_cores(len(dossiers), one_host, workers, FRESH_FORK_ITEMS)
    unwritten = [outcomes[position][2] for position in range(len(dossiers)) if outcomes[position][2]]
    if judgement is not None:  # a host whose directory is a link has no dossier, but its verdict has an outcome
        rendered = {host.name for host, unused_path in dossiers}
        unwritten += [why for why in (_write_outcome(run, host, judgement, started, write) for host in run.hosts
                                      if host.name not in rendered) if why]
    _take_stand_ins(run, dossiers, judgement, outcomes)
    return unwritten


def _take_stand_ins(run: RunModel, dossiers: List[Tuple[HostModel, str]], judgement: Optional[FleetJudgement],
                    outcomes: Sequence[Tuple[Optional[Dict[str, Any]], Optional[Tuple[HostModel, Optional[HostVerdict]]],
                                             Optional[str]]]) -> None:
    """What each host's worker worked out, set here (where forked, it was set in the worker): its index columns, and
    the stand-in and verdict of a host whose rendering failed."""
    for position in range(len(dossiers)):
        columns, failed, unused_unwritten = outcomes[position]
        dossiers[position][0].index_columns = columns  # set in the worker that rendered it, where forked
        if failed is None:
            continue
        stand_in, verdict = failed
        host, host_path = dossiers[position]
        run.hosts[run.hosts.index(host)] = stand_in
        dossiers[position] = (stand_in, host_path)
        if judgement is not None and verdict is not None:
            judgement.hosts[host.name] = verdict  # set in the worker that rendered it, where forked
