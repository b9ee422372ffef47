# -*- coding: utf-8 -*-
# Copyright: gpufleet.validation contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Rebuild the run index of a results directory from its stored runs, on the controller."""
from __future__ import annotations

import sqlite3

from ansible.plugins.action import ActionBase

from ansible_collections.gpufleet.validation.plugins.module_utils.history_index_spec import HISTORY_INDEX_ARGUMENT_SPEC
from ansible_collections.gpufleet.validation.plugins.plugin_utils.control_chars import terminal_text
from ansible_collections.gpufleet.validation.plugins.plugin_utils.controller_task import ControllerTask
from ansible_collections.gpufleet.validation.plugins.plugin_utils.history.index import (
    index_path, indexed_run_count, judged_run_ids, rebuild_index, update_index)


class ActionModule(ControllerTask, ActionBase):

    ARGUMENT_SPEC = HISTORY_INDEX_ARGUMENT_SPEC

    def run_task(self, result, args, task_vars):
        path = index_path(args["results_dir"])
        result.update(changed=False, path=path, lines=[])
        if self._task.check_mode:
            judged = judged_run_ids(args["results_dir"])
            result.update(runs=len(judged), indexed=[], dropped=[], problems=[],
                          lines=["check mode: %s would hold %d judged run(s); nothing was written" % (path, len(judged))])
            return result
        try:
            update = rebuild_index(args["results_dir"]) if args["rebuild"] else update_index(args["results_dir"])
            runs = indexed_run_count(args["results_dir"])
        except (OSError, ValueError, sqlite3.Error) as exc:
            result.update(failed=True, msg=terminal_text("the run index %s was not made: %s: %s" % (path, type(exc).__name__, exc)))
            return result
        problems = [terminal_text(problem) for problem in update.problems]
        lines = ["%s: %d run(s) indexed, %d read by this task, %d dropped (their directory is gone), %d unchanged"
                 % (path, runs, len(update.indexed), len(update.dropped), update.unchanged)]
        if update.rebuilt_schema not in ("", "none"):
            lines.append("the index held schema version %s; it was made again" % update.rebuilt_schema)
        result.update(changed=bool(update.indexed or update.dropped or update.rebuilt_schema), runs=runs, indexed=update.indexed,
                      dropped=update.dropped, problems=problems, lines=[terminal_text(line) for line in lines] + problems)
        if problems:
            result["warnings"] = problems
        return result
