# -*- coding: utf-8 -*-
# Copyright: gpufleet.validation contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Act on a run's verdicts: read each host's outcome from the run, plan in Slurm (when asked), carry the plan out
through gpufleet.validation.slurm_nodes on the delegated host, record it in the run, and complete each outcome with
its action. One exit path: every outcome read is given back, acted on or not, with why."""
from __future__ import annotations

import os
import time

from ansible.plugins.action import ActionBase

from ansible_collections.gpufleet.validation.plugins.module_utils.act_spec import ACT_ARGUMENT_SPEC
from ansible_collections.gpufleet.validation.plugins.module_utils.slurm_node_states import node_state_from_dict
from ansible_collections.gpufleet.validation.plugins.plugin_utils.act import slurm_plan
from ansible_collections.gpufleet.validation.plugins.plugin_utils.act.outcome import action_part, outcome_problem, with_action
from ansible_collections.gpufleet.validation.plugins.plugin_utils.act.slurm_record import recorded_nodes, updated_record
from ansible_collections.gpufleet.validation.plugins.plugin_utils.control_chars import terminal_text
from ansible_collections.gpufleet.validation.plugins.plugin_utils.store.atomic import write_json_atomically
from ansible_collections.gpufleet.validation.plugins.plugin_utils.store.paths import (
    OUTCOMES_DIR, SLURM_ACTIONS_FILE, is_outcome_file_name, outcome_file_name, outcome_path, run_dir)
from ansible_collections.gpufleet.validation.plugins.plugin_utils.store.read import read_json_below

MODULE = "gpufleet.validation.slurm_nodes"
RECORD_LIMIT_BYTES = 64 * 2 ** 20
OUTCOME_LIMIT_BYTES = 4 * 2 ** 20


class ActionModule(ActionBase):

    _supports_check_mode = True
    _supports_async = False
    TRANSFERS_FILES = False

    def run(self, tmp=None, task_vars=None):
        result = super(ActionModule, self).run(tmp, task_vars)
        del tmp
        unused_validation, args = self.validate_argument_spec(argument_spec=ACT_ARGUMENT_SPEC)
        try:
            path = run_dir(args["results_dir"], args["run_id"])
        except ValueError as exc:
            result.update(failed=True, msg=str(exc))
            return result
        if not os.path.isdir(os.path.join(path, OUTCOMES_DIR)):
            verb = "check mode: " if self._task.check_mode else ""
            result.update(changed=False, skipped=True, hosts={}, lines=[],
                          msg="%srun %s has no outcomes in %s: nothing to act on (the report writes them)"
                          % (verb, args["run_id"], path))
            return result
        outcomes, problems = read_outcomes(path, args["hosts"])
        warnings = ["%s: %s" % (host, why) for host, why in sorted(problems.items())]
        if args["scheduler"] == "slurm":
            self._act_in_slurm(result, args, outcomes, warnings, task_vars)
        else:
            result.update(changed=False, lines=["%d host outcome(s) in %s; no scheduler was asked to act"
                                                % (len(outcomes), os.path.join(path, OUTCOMES_DIR))])
        result["hosts"] = outcomes
        if warnings:
            result["warnings"] = [terminal_text(warning) for warning in warnings]
        return result

    def _act_in_slurm(self, result, args, outcomes, warnings, task_vars):
        read = self._slurm(args, [], task_vars)
        if read.get("failed"):
            result.update(failed=True, msg="could not read Slurm's nodes: %s" % read.get("msg", "no message"),
                          lines=[])
            return
        states = {entry["name"]: node_state_from_dict(entry) for entry in read.get("nodes") or []}
        verdicts = [slurm_plan.HostVerdict(host, str(args["node_names"].get(host) or host), outcome["verdict"],
                                           outcome["root_cause"]) for host, outcome in sorted(outcomes.items())]
        records = recorded_nodes(states, lambda run_id: read_record(args["results_dir"], run_id))
        plan = slurm_plan.plan(verdicts, states, records, args["run_id"], tuple(args["drain_on"]),
                               args["max_drain_percent"], args["min_drain_nodes"], args["intake_reason"])
        lines = plan_lines(plan)
        if self._task.check_mode:
            result.update(changed=False, lines=["check mode: nothing changed; the plan:"] + lines)
            return
        expected = {state.name: state.reason for state in states.values() if state.drained}
        changes = [{"node": action.node, "action": action.action,
                    "reason": action.reason if action.action == slurm_plan.DRAIN else None,
                    "expect_reason": expected.get(action.node)} for action in plan.changes()]
        applied, broken = [], ""
        if changes:
            done = self._slurm(args, changes, task_vars)
            if done.get("failed"):
                broken = "the changes could not be made: %s" % done.get("msg", "no message")
            applied = list(done.get("applied") or [])
        hosts_by_node = {action.node: action.host for action in plan.actions}
        for entry in applied:
            entry["host"] = hosts_by_node.get(entry.get("node"))
        when = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
        record = updated_record(read_record(args["results_dir"], args["run_id"]), args["run_id"], plan, applied, when)
        write_json_atomically(os.path.join(run_dir(args["results_dir"], args["run_id"]), SLURM_ACTIONS_FILE), record,
                              root=os.path.abspath(args["results_dir"]))
        by_node = {entry.get("node"): entry for entry in applied}
        for action in plan.actions:
            entry = by_node.get(action.node)
            why = action.reason if entry is None else "%s (%s)" % (action.reason, entry.get("why"))
            if plan.breaker.tripped and action.action == slurm_plan.DRAIN:
                why = "not drained: the circuit breaker tripped (%s)" % "; ".join(plan.breaker.words)
            outcomes[action.host] = with_action(outcomes[action.host], action_part(
                "slurm", action.node, action.action, bool(entry and entry.get("done")), why))
            write_json_atomically(outcome_path(args["results_dir"], args["run_id"], action.host), outcomes[action.host],
                                  root=os.path.abspath(args["results_dir"]))
        lines += ["%s %s: %s" % (entry.get("action"), entry.get("node"), entry.get("why")) for entry in applied]
        result.update(changed=any(entry.get("done") for entry in applied), lines=[terminal_text(line) for line in lines],
                      record=os.path.join(run_dir(args["results_dir"], args["run_id"]), SLURM_ACTIONS_FILE))
        undone = [entry for entry in applied if not entry.get("done")]
        if plan.breaker.tripped:
            result.update(failed=True, msg=terminal_text(
                "circuit breaker tripped: nothing was drained or resumed. %s. Would have drained: %s. If the "
                "verdicts are right, drain by hand or raise gpufleet_slurm_max_drain_percent for one run; if not, fix "
                "the baseline or rule and re-judge (playbooks/report.yml)"
                % ("; ".join(plan.breaker.words), "; ".join("%s (host %s): %s" % (action.node, action.host, action.reason)
                                                            for action in plan.planned(slurm_plan.DRAIN)))))
        elif broken or undone:
            result.update(failed=True, msg=terminal_text("not every change was made: %s" % "; ".join(
                [broken] * bool(broken)
                + ["%s %s: %s" % (entry.get("action"), entry.get("node"), entry.get("why")) for entry in undone])))

    def _slurm(self, args, changes, task_vars):
        module_args = {"changes": changes, "sinfo_path": args["sinfo_path"], "scontrol_path": args["scontrol_path"]}
        if args["slurm_conf"]:
            module_args["slurm_conf"] = args["slurm_conf"]
        return self._execute_module(module_name=MODULE, module_args=module_args, task_vars=task_vars, wrap_async=False)


def plan_lines(plan):
    """The plan for the terminal: one line per host, then the breaker."""
    lines = ["%s %s (host %s): %s" % (action.action, action.node, action.host, action.reason) for action in plan.actions]
    return [terminal_text(line) for line in lines + ["circuit breaker: %s" % word for word in plan.breaker.words]]


def read_outcomes(path, hosts):
    """({host: outcome}, {host: why it has none}) for the hosts named, or every outcome of the run."""
    directory = os.path.join(path, OUTCOMES_DIR)
    outcomes, problems = {}, {}
    if hosts:
        wanted = [(host, outcome_file_name(host)) for host in hosts]
    else:
        wanted = [(None, name) for name in sorted(os.listdir(directory)) if is_outcome_file_name(name)]
    for host, name in wanted:
        try:
            document = read_json_below(directory, name, OUTCOME_LIMIT_BYTES)
        except (OSError, ValueError) as exc:
            problems[host or name] = "no outcome to act on (%s): it was not reported in this run" % exc
            continue
        why = outcome_problem(document)
        if why is None and host is not None and document["host"] != host:
            why = "its outcome file names host %r" % document["host"]
        if why is None and host is None and outcome_file_name(document["host"]) != name:
            why = "its outcome file %s names host %r" % (name, document["host"])
        if why is not None:
            problems[host or name] = "outcome not acted on: %s" % why
            continue
        outcomes[document["host"]] = document
    return outcomes, problems


def read_record(results_dir, run_id):
    """The run's record of acting in Slurm, or None (no such run here, none recorded, or unreadable)."""
    try:
        return read_json_below(run_dir(results_dir, run_id), SLURM_ACTIONS_FILE, RECORD_LIMIT_BYTES)
    except (OSError, ValueError):
        return None
