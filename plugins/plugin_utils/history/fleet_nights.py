# -*- coding: utf-8 -*-
# Copyright: gpufleet.validation contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""What the fleet history page shows of each run (docs/history.md, "Pictures"), read from the run index: the newest
runs first, each with its hosts counted by verdict, the hosts the act drained and resumed, and the hosts whose trend
checks fired, each with its dossier where the run holds one. Only reads (PRAGMA query_only), with parameterised SQL."""
from __future__ import annotations

import os
import stat
from dataclasses import dataclass, field
from typing import Dict, List, Optional, Sequence, Tuple

from ..judge.history_model import HISTORY_PROBE
from .index import open_index

# The page shows at most this many runs, newest first.
PAGE_RUNS = 60
# The trend checks' causes the page names: a check of the history probe that warned or failed.
FIRED_STATUSES = ("warn", "fail")


@dataclass(frozen=True)
class HostMention:
    """A host named on the page: its name, and its dossier's path relative to the results directory ("" when the run
    holds none that can be linked), with what is said of it (the trend checks that fired, or a drain's state)."""

    host: str
    dossier: str = ""
    notes: Tuple[str, ...] = ()


@dataclass
class RunNight:
    """One run of the page: its id, when it started, its hosts by verdict ({verdict: count}), and the hosts named."""

    run_id: str
    started: str
    host_count: int
    verdicts: Dict[str, int] = field(default_factory=dict)
    drained: List[HostMention] = field(default_factory=list)
    resumed: List[HostMention] = field(default_factory=list)
    trends: List[HostMention] = field(default_factory=list)
    # the hosts that did not pass, worst verdict first (at most NOT_PASSING_SHOWN; the run's own index lists them all)
    not_passing: List[HostMention] = field(default_factory=list)


_RUNS = "SELECT run_id, started, host_count FROM runs ORDER BY started DESC, run_id DESC LIMIT ?"
_SHOWN = "SELECT run_id FROM runs ORDER BY started DESC, run_id DESC LIMIT ?"
_VERDICTS = "SELECT run_id, verdict, count(*) FROM hosts WHERE run_id IN (%s) GROUP BY run_id, verdict" % _SHOWN
_SLURM = ("SELECT s.run_id, s.action, s.host, s.node, s.confirmed, s.intake, h.dossier FROM slurm_actions s "
          "LEFT JOIN hosts h ON h.run_id = s.run_id AND h.host = s.host WHERE s.run_id IN (%s) ORDER BY s.run_id, s.position" % _SHOWN)
_TRENDS = ("SELECT c.run_id, c.host, c.check_id, h.dossier FROM causes c LEFT JOIN hosts h ON h.run_id = c.run_id AND h.host = c.host "
           "WHERE c.run_id IN (%s) AND substr(c.check_id, 1, ?) = ? AND c.status IN (%s) ORDER BY c.run_id, c.host, c.position"
           % (_SHOWN, ", ".join("?" * len(FIRED_STATUSES))))


# The hosts that did not pass named per run, worst first; the others are counted (their run's index.html names them all).
NOT_PASSING_SHOWN = 10
NOT_PASSING_ORDER = ("fail", "error", "unreachable", "not_validated", "warn")
_NOT_PASSING = ("SELECT run_id, host, verdict, dossier FROM (SELECT run_id, host, verdict, dossier, ROW_NUMBER() OVER (PARTITION BY "
                "run_id ORDER BY CASE verdict %s ELSE %d END, host) AS place FROM hosts WHERE run_id IN (%s) AND verdict != 'pass') "
                "WHERE place <= ? ORDER BY run_id, place" % (" ".join("WHEN ? THEN %d" % rank for rank in range(len(NOT_PASSING_ORDER))),
                                                             len(NOT_PASSING_ORDER), _SHOWN))


@dataclass
class FleetNights:
    """The runs the page shows (newest first), how many the index holds, and the most the page shows."""

    nights: List[RunNight]
    indexed: int
    limit: int


def fleet_nights(results_dir: str, runs: int = PAGE_RUNS) -> FleetNights:
    """The newest runs of the index (at most runs), newest first, with what the history page shows of each."""
    connection = open_index(results_dir)
    try:
        connection.execute("BEGIN")  # one read transaction: every query sees the same runs, whatever a writer commits
        indexed = connection.execute("SELECT count(*) FROM runs").fetchone()[0]
        nights = [RunNight(run_id, started or "", host_count or 0) for run_id, started, host_count in connection.execute(_RUNS, (runs,))]
        by_id = {night.run_id: night for night in nights}
        for run_id, verdict, count in connection.execute(_VERDICTS, (runs,)):
            by_id[run_id].verdicts[verdict] = count
        linked = _DossierLinks(results_dir)
        for run_id, host, verdict, dossier in connection.execute(_NOT_PASSING, NOT_PASSING_ORDER + (runs, NOT_PASSING_SHOWN)):
            by_id[run_id].not_passing.append(HostMention(host, linked.of(run_id, dossier), (verdict,)))
        for run_id, action, host, node, confirmed, intake, dossier in connection.execute(_SLURM, (runs,)):
            notes = tuple(note for note, said in (("not confirmed", action == "drain" and not confirmed), ("intake", intake)) if said)
            mention = HostMention(host or node or "", linked.of(run_id, dossier) if host else "", notes)
            (by_id[run_id].drained if action == "drain" else by_id[run_id].resumed).append(mention)
        prefix = HISTORY_PROBE + "."
        fired: Dict[Tuple[str, str], List[str]] = {}
        dossiers: Dict[Tuple[str, str], Optional[str]] = {}
        for run_id, host, check_id, dossier in connection.execute(_TRENDS, (runs, len(prefix), prefix) + FIRED_STATUSES):
            checks = fired.setdefault((run_id, host), [])
            if check_id not in checks:  # one check may fire for several GPUs or root causes
                checks.append(check_id)
            dossiers[(run_id, host)] = dossier
        for (run_id, host), checks in fired.items():
            by_id[run_id].trends.append(HostMention(host, linked.of(run_id, dossiers[(run_id, host)]), tuple(checks)))
    finally:
        connection.close()
    return FleetNights(nights, indexed, runs)


class _DossierLinks:
    """A dossier path of the index made relative to the results directory, where it names a regular file (no link) of
    the run below the run's directory; "" otherwise (the run was moved, or the path is not one the report writes)."""

    def __init__(self, results_dir: str) -> None:
        self.top = os.path.abspath(results_dir)

    def of(self, run_id: str, dossier: Optional[str]) -> str:
        parts: Sequence[str] = (dossier or "").split("/")
        if not dossier or any(part in ("", ".", "..") or os.sep in part for part in parts):
            return ""
        path = os.path.join(self.top, run_id, *parts)
        try:
            if any(stat.S_ISLNK(os.lstat(os.path.join(self.top, run_id, *parts[:depth])).st_mode) for depth in range(len(parts) + 1)):
                return ""
            return "/".join([run_id] + list(parts)) if stat.S_ISREG(os.lstat(path).st_mode) else ""
        except OSError:
            return ""
