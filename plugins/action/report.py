# -*- coding: utf-8 -*-
# Copyright: gpufleet.validation contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Render the dossiers and the fleet index of a run, on the controller."""
from __future__ import annotations

import os

from ansible.plugins.action import ActionBase

from ansible_collections.gpufleet.validation.plugins.module_utils.report_spec import REPORT_ARGUMENT_SPEC
from ansible_collections.gpufleet.validation.plugins.plugin_utils.atomic_write import write_text_atomically
from ansible_collections.gpufleet.validation.plugins.plugin_utils.report_render import render_run
from ansible_collections.gpufleet.validation.plugins.plugin_utils.result_paths import run_dir
from ansible_collections.gpufleet.validation.plugins.plugin_utils.run_link import point_latest_at


class ActionModule(ActionBase):

    _supports_check_mode = True
    _supports_async = False
    TRANSFERS_FILES = False

    def run(self, tmp=None, task_vars=None):
        result = super(ActionModule, self).run(tmp, task_vars)
        del tmp
        validation, args = self.validate_argument_spec(argument_spec=REPORT_ARGUMENT_SPEC)
        try:
            path = run_dir(args["results_dir"], args["run_id"])
        except ValueError as exc:
            result.update(failed=True, msg=str(exc))
            return result
        if self._task.check_mode:
            result.update(changed=False, skipped=True, msg="check mode: no report was rendered for run %s" % args["run_id"],
                          summary_lines=["check mode: nothing rendered"])
            return result
        host_groups = {host: list(groups or []) for host, groups in (args["host_groups"] or {}).items()}
        try:
            os.makedirs(path, exist_ok=True)
            run = render_run(path, args["expected_hosts"], host_groups, write_text_atomically)
            point_latest_at(args["results_dir"], args["run_id"])
        except (OSError, ValueError) as exc:
            result.update(failed=True, msg="could not render the reports of run %s in %s: %s" % (args["run_id"], path, exc))
            return result

        index_html = os.path.join(path, "index.html")
        hosts = {}
        lines = []
        for host in run.hosts_worst_first():
            dossier = os.path.join(path, host.dir_name, "dossier.html")
            hosts[host.name] = {"state": host.state, "reasons": host.reasons, "dossier_html": dossier,
                                "dossier_md": os.path.join(path, host.dir_name, "dossier.md")}
            reason = "; ".join(host.reasons)
            lines.append("%s: %s%s" % (host.name, host.state, (" - " + reason) if reason else ""))
        lines.append("fleet index: %s" % index_html)
        unreachable = sorted(name for name, host in hosts.items() if host["state"] == "unreachable")
        not_ok = ["%s: %s" % (name, host["state"]) for name, host in sorted(hosts.items())
                  if host["state"] not in ("ok", "unreachable")]
        if not_ok:
            result["warnings"] = ["hosts whose probes did not all succeed (see the index): %s" % ", ".join(not_ok)]
        result.update(changed=True, index_html=index_html, index_md=os.path.join(path, "index.md"), hosts=hosts,
                      summary_lines=lines, unreachable_hosts=unreachable)
        return result
