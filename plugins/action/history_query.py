# -*- coding: utf-8 -*-
# Copyright: gpufleet.validation contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Answer one of the run index's queries (a host's metric over runs, hosts that failed, every run a GPU was in), on the
controller; the rows as CSV or JSON, written to a file and returned."""
from __future__ import annotations

import os
import sqlite3

from ansible.plugins.action import ActionBase

from ansible_collections.gpufleet.validation.plugins.module_utils.history_query_spec import HISTORY_QUERY_ARGUMENT_SPEC
from ansible_collections.gpufleet.validation.plugins.plugin_utils.control_chars import terminal_text
from ansible_collections.gpufleet.validation.plugins.plugin_utils.controller_task import ControllerTask
from ansible_collections.gpufleet.validation.plugins.plugin_utils.history.index import index_path
from ansible_collections.gpufleet.validation.plugins.plugin_utils.history.queries import ARGUMENTS, QUERIES, QueryError, run_query
from ansible_collections.gpufleet.validation.plugins.plugin_utils.history.query_output import query_text
from ansible_collections.gpufleet.validation.plugins.plugin_utils.store.atomic import write_text_atomically


class ActionModule(ControllerTask, ActionBase):

    ARGUMENT_SPEC = HISTORY_QUERY_ARGUMENT_SPEC

    def run_task(self, result, args, task_vars):
        path = index_path(args["results_dir"])
        columns = list(QUERIES[args["query"]].columns)
        result.update(changed=False, path=path, columns=columns)
        try:
            rows = run_query(args["results_dir"], args["query"], {key: args[key] for key in ARGUMENTS})
            text = query_text(args["format"], columns, rows)
            if args["dest"] and not self._task.check_mode:
                if os.path.islink(args["dest"]):
                    raise QueryError("%s is a symbolic link (to %s); the answer is never written through a link: name another dest"
                                     % (args["dest"], os.readlink(args["dest"])))
                write_text_atomically(os.path.abspath(args["dest"]), text)
        except (OSError, QueryError, sqlite3.Error) as exc:
            result.update(failed=True, msg=terminal_text("the %s query of the run index %s was not answered: %s"
                                                         % (args["query"], path, exc)))
            return result
        lines = ["%s query of %s: %d row(s)" % (args["query"], path, len(rows))]
        if args["dest"]:
            lines.append(("check mode: %s would be written" if self._task.check_mode else "written to %s") % args["dest"])
        result.update(changed=bool(args["dest"]) and not self._task.check_mode, rows=rows, count=len(rows), text=text,
                      lines=[terminal_text(line) for line in lines])
        return result
