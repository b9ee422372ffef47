# -*- coding: utf-8 -*-
# Copyright: gpufleet.validation contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The report's update of the run index, after the run's outputs are written: whatever goes wrong is a run warning
that says what and how to make the index again, never a lost report."""
from __future__ import annotations

import sqlite3
from typing import Any, List, Mapping, Sequence

from ..judge.rules import rule_list

from .index import update_index
from .trend_reader import IndexHistory, runs_needed

REBUILD_HINT = "the run's report is written; rebuild the index with playbooks/history.yml"


def index_warnings(results_dir: str, run_id: str) -> List[str]:
    """Update the index of results_dir (index.update_index); the warnings to show: a run it could not read, or the
    update itself failing."""
    try:
        update = update_index(results_dir, run_id=run_id)
    except (OSError, ValueError, sqlite3.Error) as exc:
        return ["the run index of %s was not updated: %s: %s (%s)" % (results_dir, type(exc).__name__, exc, REBUILD_HINT)]
    return ["the run index %s: %s" % (update.path, problem) for problem in update.problems]


def trend_history(results_dir: str, run_id: str, overrides: Mapping[str, Mapping[str, Any]]):
    """The report's trend_history for run_judgement.judge_run: the index brought up to date with the runs stored before
    this one (a run added or changed since the last report, a run removed), then read a host at a time. An index that
    cannot be updated still gives what it holds; one that cannot be read leaves the trend checks skipped, saying why."""
    def history(earlier: Sequence[str], rules: Any, metric_ids: Sequence[str]) -> IndexHistory:
        problem = ""
        if earlier:
            try:
                update_index(results_dir)
            except (OSError, ValueError, sqlite3.Error) as exc:
                problem = "the run index of %s could not be brought up to date (%s: %s; %s)" % (
                    results_dir, type(exc).__name__, exc, "rebuild it with playbooks/history.yml")
        return IndexHistory(results_dir, run_id, earlier, runs_needed(rule_list(rules), overrides), metric_ids, problem)
    return history
