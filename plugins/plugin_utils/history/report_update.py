# -*- coding: utf-8 -*-
# Copyright: gpufleet.validation contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The report's update of the run index, after the run's outputs are written: whatever goes wrong is a run warning
that says what and how to make the index again, never a lost report."""
from __future__ import annotations

import sqlite3
from typing import List

from .index import update_index

REBUILD_HINT = "the run's report is written; rebuild the index with playbooks/history.yml"


def index_warnings(results_dir: str, run_id: str) -> List[str]:
    """Update the index of results_dir (index.update_index); the warnings to show: a run it could not read, or the
    update itself failing."""
    try:
        update = update_index(results_dir, run_id=run_id)
    except (OSError, ValueError, sqlite3.Error) as exc:
        return ["the run index of %s was not updated: %s: %s (%s)" % (results_dir, type(exc).__name__, exc, REBUILD_HINT)]
    return ["the run index %s: %s" % (update.path, problem) for problem in update.problems]
