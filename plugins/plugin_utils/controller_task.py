# -*- coding: utf-8 -*-
# Copyright: gpufleet.validation contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The opening every controller-side action plugin shares (act, calibrate_baseline, check_inputs, open_run, report):
check mode supported, no async, no file transfer, the task's arguments checked against the plugin's spec, then
run_task(result, args, task_vars) does the plugin's own work and gives the result back; RunTask is a task on one stored
run. Mixins placed before ActionBase (`class ActionModule(ControllerTask, ActionBase)`), so that this file imports
nothing of Ansible."""
from __future__ import annotations

from .store.paths import run_dir


class ControllerTask:

    ARGUMENT_SPEC: dict = {}
    _supports_check_mode = True
    _supports_async = False
    TRANSFERS_FILES = False

    def run(self, tmp=None, task_vars=None):
        result = super().run(tmp, task_vars)
        del tmp
        unused_validation, args = self.validate_argument_spec(argument_spec=self.ARGUMENT_SPEC)
        return self.run_task(result, args, task_vars)

    def run_task(self, result, args, task_vars):
        raise NotImplementedError


class RunTask(ControllerTask):
    """A controller task on one stored run (act, report): the directory of the run its arguments name (results_dir,
    run_id) is found first, and run_on(result, args, task_vars, path) is handed it; a run id that is not one fails the
    task saying why."""

    def run_task(self, result, args, task_vars):
        try:
            path = run_dir(args["results_dir"], args["run_id"])
        except ValueError as exc:
            result.update(failed=True, msg=str(exc))
            return result
        return self.run_on(result, args, task_vars, path)

    def run_on(self, result, args, task_vars, path):
        raise NotImplementedError
