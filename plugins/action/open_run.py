# -*- coding: utf-8 -*-
# Copyright: gpufleet.validation contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Open the run's directory for this playbook run (plugins/plugin_utils/store/run_dir.py), or refuse it with the reason."""
from __future__ import annotations

import os

from ansible.plugins.action import ActionBase
from ansible.utils.display import Display

from ansible_collections.gpufleet.validation.plugins.module_utils.open_run_spec import RUN_ARGUMENT_SPEC
from ansible_collections.gpufleet.validation.plugins.plugin_utils.controller_task import ControllerTask
from ansible_collections.gpufleet.validation.plugins.plugin_utils.store.paths import run_dir
from ansible_collections.gpufleet.validation.plugins.plugin_utils.store.run_order import order_warnings
from ansible_collections.gpufleet.validation.plugins.plugin_utils.control_chars import terminal_text
from ansible_collections.gpufleet.validation.plugins.plugin_utils.store.run_dir import (
    StoreRefused,
    gone_writer_line,
    gone_writers,
    open_run,
    playbook_writer,
)

display = Display()


class ActionModule(ControllerTask, ActionBase):

    ARGUMENT_SPEC = RUN_ARGUMENT_SPEC

    def run_task(self, result, args, task_vars):
        writer = playbook_writer(args["resume"], args["profile"], task_vars.get("ansible_limit"))
        try:
            path = run_dir(args["results_dir"], args["run_id"])
            if self._task.check_mode:
                result.update(changed=False, results_dir=args["results_dir"], run_dir=path, writer_id=writer["writer_id"], writers=0,
                              msg="check mode: run %s was not opened and nothing was written" % args["run_id"])
                return result
            record = open_run(args["results_dir"], args["run_id"], writer)
        except (StoreRefused, ValueError) as exc:
            result.update(failed=True, msg="run %s was not started: %s" % (args["run_id"], exc))
            return result
        except OSError as exc:
            result.update(failed=True, msg="run %s was not started: its results could not be stored in %s (%s); set "
                                           "gpufleet_results_dir to a directory this user can write"
                                           % (args["run_id"], args["results_dir"], exc))
            return result
        gone = [gone_writer_line(args["run_id"], entry) for entry in gone_writers(record, writer)] if writer["resume"] else []
        for line in gone:
            display.display(terminal_text(line))
        for line in order_warnings(args["results_dir"], args["run_id"]):
            display.warning(terminal_text(line))
        result.update(changed=True, results_dir=args["results_dir"], run_dir=os.path.abspath(path), writer_id=writer["writer_id"],
                      writers=len(record["writers"]), gone_writers=gone)
        return result
