# -*- coding: utf-8 -*-
# Copyright: gpufleet.validation contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""What the trend checks (judge/trends.py) know of a host's earlier runs: the contract between the run index, which
reads it (history/trend_reader.py), and the judge, which never opens the index itself. Pure data."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Dict, List, Optional, Tuple

# The prefix of every trend check's id and the probe its rules name (rules/history.yaml): no probe measures anything for
# them; they read the run index.
HISTORY_PROBE = "history"
# The escalation's check (rules/history.yaml): its fail leads a host's reasons.
RETURNING_FAULT_CHECK = HISTORY_PROBE + ".returning_fault"
# Root-cause statuses that count as a fault (a returning fault, a verdict's fault): a warn is no fault.
FAULT_STATUSES = ("fail", "error")


@dataclass(frozen=True)
class EarlierRun:
    """One earlier run of a host as the index holds it, newest first in HostHistory.runs."""

    run_id: str
    started: str                      # ISO 8601 UTC
    # the verdict of its measurements: before its trend checks (fleet.json measured_verdict; the verdict where absent)
    measured_verdict: str
    faults: Tuple[str, ...] = ()      # ids of its root causes with a fault status, trend checks left out
    lowest: Tuple[str, ...] = ()      # headline metric ids it was its group's lowest on (fleet.json lowest_of_group)
    resumed: bool = False             # the act resumed the host after this run (slurm-actions.json)
    gpus: Tuple[str, ...] = ()        # the UUIDs of the GPUs its checks and metrics named, sorted


# (metric id, GPU uuid or device or "" for the host): [(started, value, run_id)] newest first, of earlier runs.
SeriesKey = Tuple[str, str]


@dataclass
class HostHistory:
    """A host's earlier runs, read from the index for this run's trend checks; problem says why there is none."""

    runs: List[EarlierRun] = field(default_factory=list)
    series: Dict[SeriesKey, List[Tuple[str, float, str]]] = field(default_factory=dict)
    problem: str = ""

    @classmethod
    def unavailable(cls, problem: str) -> "HostHistory":
        return cls(problem=problem)


def same_machine(runs: List[EarlierRun], gpus: Tuple[str, ...]) -> List[EarlierRun]:
    """The newest runs (newest first) that had the same GPUs as gpus (sorted UUIDs): the runs of this machine since its
    GPUs last changed (a GPU swapped, or another machine under the host's name)."""
    taken = []
    for run in runs:
        if run.gpus != gpus:
            break
        taken.append(run)
    return taken


def series_key(metric_id: str, gpu_uuid: Optional[str], device: Optional[str]) -> SeriesKey:
    return metric_id, gpu_uuid or device or ""


class HistorySource:
    """What judge_fleet asks of the run index: when this run started, and each host's earlier runs. The run index's
    reader (history/trend_reader.py) is one; a test may give its own."""

    started: str = ""

    def of(self, host: str) -> HostHistory:  # pragma: no cover - the interface
        raise NotImplementedError
