# -*- coding: utf-8 -*-
# Copyright: gpufleet.validation contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Judge a run and render its dossiers, fleet index and exports, on the controller."""
from __future__ import annotations

import os
from collections.abc import Mapping

from ansible.plugins.action import ActionBase

from ansible_collections.gpufleet.validation.plugins.module_utils.report_spec import REPORT_ARGUMENT_SPEC
from ansible_collections.gpufleet.validation.plugins.plugin_utils.controller_task import RunTask
from ansible_collections.gpufleet.validation.plugins.plugin_utils.store.atomic import text_writer_below
from ansible_collections.gpufleet.validation.plugins.plugin_utils.control_chars import terminal_text
from ansible_collections.gpufleet.validation.plugins.plugin_utils.history.report_update import index_warnings, trend_history
from ansible_collections.gpufleet.validation.plugins.plugin_utils.judge.model import blocks_gate
from ansible_collections.gpufleet.validation.plugins.plugin_utils.rules_and_baselines import validate_overrides
from ansible_collections.gpufleet.validation.plugins.plugin_utils.store.stored_run import load_run
from ansible_collections.gpufleet.validation.plugins.plugin_utils.report.history_page import write_history_page
from ansible_collections.gpufleet.validation.plugins.plugin_utils.report.render import render_run
from ansible_collections.gpufleet.validation.plugins.plugin_utils.store.paths import (
    DOSSIER_HTML_FILE,
    DOSSIER_MD_FILE,
    FLEET_EXPORT_FILES,
    FLEET_INDEX_FILES,
    INDEX_HTML_FILE,
)
from ansible_collections.gpufleet.validation.plugins.plugin_utils.run_judgement import (
    gate_lines,
    judge_run,
    verdict_lines,
    weakened_rule_lines,
)
from ansible_collections.gpufleet.validation.plugins.plugin_utils.store.latest_link import point_latest_at
from ansible_collections.gpufleet.validation.plugins.plugin_utils.stored_overrides import judged_overrides, stored_override_sources


class ActionModule(RunTask, ActionBase):

    ARGUMENT_SPEC = REPORT_ARGUMENT_SPEC

    def run_on(self, result, args, task_vars, path):
        if self._task.check_mode:
            result.update(changed=False, skipped=True, msg="check mode: no report was rendered for run %s" % args["run_id"],
                          summary_lines=["check mode: nothing rendered"], gate_lines=[], gate_hosts=[], unreachable_hosts=[])
            return result
        if not os.path.isdir(path):
            result.update(failed=True, msg="run %s has no results in %s" % (args["run_id"], path))
            return result

        host_groups = {host: list(groups or []) for host, groups in (args["host_groups"] or {}).items()}
        # A host's overrides that are not a mapping stay as they are: the judge reports them as that host's error.
        overrides = {host: dict(value) if isinstance(value, Mapping) else value
                     for host, value in (args["rule_overrides"] or {}).items() if value}
        warnings = ["rule overrides of %s: %s" % (host, problem)
                    for host, value in sorted(overrides.items()) for problem in validate_overrides(value)]
        try:
            run = load_run(path, args["expected_hosts"], host_groups)
            sources = stored_override_sources(run, overrides)
            overrides = judged_overrides(run, overrides)
            judgement = judge_run(run, args["results_dir"], overrides, args["baselines_dir"], args["rules_file"],
                                  profile=args["profile"], custom_profiles=args["profiles"] or None,
                                  override_sources=sources, trend_history=trend_history(args["results_dir"], args["run_id"], overrides))
            render_run(path, args["expected_hosts"], host_groups, text_writer_below(args["results_dir"]),
                       judgement=judgement, loaded=run, gated=args["gated"])
        except (OSError, ValueError) as exc:
            result.update(failed=True, msg="could not judge or render run %s in %s: %s" % (args["run_id"], path, exc))
            return result
        try:
            point_latest_at(args["results_dir"], args["run_id"])
        except OSError as exc:  # the run is judged and its report written: the link is a convenience, said not fatal
            warnings.append("the link to the newest run was not updated: %s" % exc)
        warnings.extend(index_warnings(args["results_dir"], args["run_id"]))
        warnings.extend(write_history_page(args["results_dir"]))

        dir_names = {host.name: host.dir_name for host in run.hosts}
        hosts = {}
        # A host's verdict is said once, in its summary line (the role prints summary_lines), never again as a warning.
        lines = verdict_lines(judgement)
        weakened = weakened_rule_lines(judgement)
        for verdict, line in zip(judgement.hosts_worst_first(), lines):
            host_path = os.path.join(path, dir_names[verdict.host])
            hosts[verdict.host] = {"verdict": verdict.verdict, "reasons": verdict.reasons, "sku": verdict.sku,
                                   "line": line, "gate": blocks_gate(verdict),
                                   "dossier_html": os.path.join(host_path, DOSSIER_HTML_FILE),
                                   "dossier_md": os.path.join(host_path, DOSSIER_MD_FILE)}
        warnings.extend("%s in run %s: %s" % (entry["dir"], args["run_id"], entry["why"]) for entry in run.stray)
        files = {name: os.path.join(path, name) for name in FLEET_INDEX_FILES + FLEET_EXPORT_FILES}
        lines.extend(weakened)
        lines.append("fleet index: %s" % files[INDEX_HTML_FILE])
        if warnings:
            result["warnings"] = [terminal_text(warning) for warning in warnings]
        unreachable = sorted(terminal_text(name) for name, host in hosts.items() if host["verdict"] == "unreachable")
        gated = [terminal_text(name) for name, host in hosts.items() if host["gate"]]
        result.update(changed=True, hosts=hosts, summary_lines=lines, gate_lines=gate_lines(judgement), gate_hosts=gated,
                      unreachable_hosts=unreachable, weakened_rules=judgement.weakened_rules,
                      previous_run_id=judgement.previous_run_id, index_html=files[INDEX_HTML_FILE], files=files)
        return result
