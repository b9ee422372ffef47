# -*- coding: utf-8 -*-
# Copyright: gpufleet.validation contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Calibrate a SKU's baseline from a stored run and write it into the user's folder, on the controller."""
from __future__ import annotations

from collections.abc import Mapping

from ansible.plugins.action import ActionBase

from ansible_collections.gpufleet.validation.plugins.action.report import judged_overrides
from ansible_collections.gpufleet.validation.plugins.module_utils.calibrate_baseline_spec import (
    CALIBRATE_BASELINE_ARGUMENT_SPEC, LATEST_RUN)
from ansible_collections.gpufleet.validation.plugins.plugin_utils.controller_task import ControllerTask
from ansible_collections.gpufleet.validation.plugins.plugin_utils.calibrate.from_run import CalibrationRefused, calibrate
from ansible_collections.gpufleet.validation.plugins.plugin_utils.calibrate.write import (
    WriteRefused, baseline_path, write_baseline, write_problem)
from ansible_collections.gpufleet.validation.plugins.plugin_utils.control_chars import terminal_text
from ansible_collections.gpufleet.validation.plugins.plugin_utils.store.latest_link import latest_run_id
from ansible_collections.gpufleet.validation.plugins.plugin_utils.store.paths import run_dir
from ansible_collections.gpufleet.validation.plugins.plugin_utils.store.stored_run import load_run


class ActionModule(ControllerTask, ActionBase):

    ARGUMENT_SPEC = CALIBRATE_BASELINE_ARGUMENT_SPEC

    def run_task(self, result, args, task_vars):
        result.update(changed=False, run_id=args["run_id"], hosts=[], left_out={}, keys={}, refused=[], lines=[])
        try:
            run_id = latest_run_id(args["results_dir"]) if args["run_id"] == LATEST_RUN else args["run_id"]
            result["run_id"] = run_id
            given = {host: dict(value) if isinstance(value, Mapping) else value
                     for host, value in (args["rule_overrides"] or {}).items() if value}
            overrides = judged_overrides(load_run(run_dir(args["results_dir"], run_id)), given)
            calibration = calibrate(args["results_dir"], run_id, args["sku"], args["hosts"], args["baselines_dir"],
                                    args["rules_file"], args["facts"], overrides)
        except (CalibrationRefused, OSError, ValueError) as exc:
            result.update(failed=True, msg=terminal_text("no baseline calibrated: %s" % exc), refused=[terminal_text(str(exc))])
            return result
        refused = list(calibration.refusals)
        if not refused:
            problem = write_problem(args["output_dir"], args["sku"], args["replace"])
            if problem:
                refused.append(problem)
        result.update(hosts=calibration.hosts, left_out=calibration.left_out, keys=keys_of(calibration),
                      lines=[terminal_text(line) for line in calibration.lines()] + [terminal_text("refused: %s" % why)
                                                                                     for why in refused[len(calibration.refusals):]])
        if refused:
            result.update(failed=True, refused=[terminal_text(why) for why in refused],
                          msg=terminal_text("no baseline written: %s" % "; ".join(refused)))
            return result
        path = baseline_path(args["output_dir"], args["sku"])
        result.update(path=path, baseline_yaml=calibration.text)
        if self._task.check_mode:
            result["lines"].append("check mode: %s would be written (baseline_yaml), nothing was" % path)
            return result
        try:
            write_baseline(args["output_dir"], args["sku"], calibration.text, args["replace"])
        except (WriteRefused, OSError) as exc:
            result.update(failed=True, refused=[terminal_text(str(exc))], msg=terminal_text("no baseline written: %s" % exc))
            return result
        result["lines"].append("written: %s; judge with -e gpufleet_baselines_dir=%s" % (path, args["output_dir"]))
        result["changed"] = True
        return result


def keys_of(calibration):
    """{known_good key: its numbers and verdict} for the result."""
    found = {}
    for key in calibration.keys:
        spread = key.spread
        found[key.key] = {"metric": key.metric.id, "unit": key.metric.unit, "values": dict(key.values),
                          "value": spread.median if spread else None,
                          "spread_pct": round(100.0 * spread.spread, 2) if spread else None,
                          "tolerance_pct": round(100.0 * spread.tolerance, 2) if spread else None,
                          "refused": key.refused}
    return found
