# -*- coding: utf-8 -*-
# Copyright: gpufleet.validation contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Act on a run's verdicts: read each host's outcome from the run, plan in Slurm (when asked), carry the plan out
through gpufleet.validation.slurm_nodes on the delegated host, record it in the run, and complete each outcome with
its action. One exit path: every outcome read is given back, acted on or not, with why."""
from __future__ import annotations

import contextlib
import os
import time

from ansible.plugins.action import ActionBase

from ansible_collections.gpufleet.validation.plugins.module_utils.act_spec import ACT_ARGUMENT_SPEC
from ansible_collections.gpufleet.validation.plugins.module_utils.slurm_node_states import node_state_from_dict
from ansible_collections.gpufleet.validation.plugins.plugin_utils.act import slurm_plan, slurm_words
from ansible_collections.gpufleet.validation.plugins.plugin_utils.act.outcome import ROOT_ACTIONS_FIELD, outcome_problem, with_action
from ansible_collections.gpufleet.validation.plugins.plugin_utils.act.slurm_record import (
    held_drains, record_problem, recorded_nodes, updated_record, with_planned_drains)
from ansible_collections.gpufleet.validation.plugins.plugin_utils.control_chars import terminal_text
from ansible_collections.gpufleet.validation.plugins.plugin_utils.controller_task import RunTask
from ansible_collections.gpufleet.validation.plugins.plugin_utils.report.exports import export_json_text
from ansible_collections.gpufleet.validation.plugins.plugin_utils.run_variables_check import act_problems
from ansible_collections.gpufleet.validation.plugins.plugin_utils.store.atomic import write_text_atomically
from ansible_collections.gpufleet.validation.plugins.plugin_utils.store.paths import (
    OUTCOMES_DIR, SLURM_ACTIONS_FILE, SLURM_ACTIONS_LOCK, is_outcome_file_name, outcome_file_name, outcome_path, run_dir)
from ansible_collections.gpufleet.validation.plugins.plugin_utils.store.read import read_json_below
from ansible_collections.gpufleet.validation.plugins.plugin_utils.store.run_lock import run_lock

MODULE = "gpufleet.validation.slurm_nodes"
RECORD_LIMIT_BYTES = 64 * 2 ** 20
OUTCOME_LIMIT_BYTES = 4 * 2 ** 20


class ActionModule(RunTask, ActionBase):

    ARGUMENT_SPEC = ACT_ARGUMENT_SPEC

    def run_on(self, result, args, task_vars, path):
        if not os.path.isdir(os.path.join(path, OUTCOMES_DIR)):
            verb = "check mode: " if self._task.check_mode else ""
            result.update(changed=False, skipped=True, hosts={}, lines=[],
                          msg="%srun %s has no outcomes in %s: nothing to act on (the report writes them)"
                          % (verb, args["run_id"], path))
            return result
        everyone, problems = read_outcomes(path)
        outcomes = {host: everyone[host] for host in args["hosts"] if host in everyone} if args["hosts"] else dict(everyone)
        problems.update({host: "no outcome to act on: it was not reported in this run"
                         for host in args["hosts"] if host not in everyone})
        warnings = ["%s: %s" % (host, why) for host, why in sorted(problems.items())]
        if args["scheduler"] == "slurm":
            self._act_in_slurm(result, args, outcomes, sorted(everyone), task_vars)
        else:
            result.update(changed=False, lines=["%d host outcome(s) in %s; no scheduler was asked to act"
                                                % (len(outcomes), os.path.join(path, OUTCOMES_DIR))])
        result["hosts"] = outcomes
        if warnings:
            result["warnings"] = [terminal_text(warning) for warning in warnings]
        return result

    def _act_in_slurm(self, result, args, outcomes, everyone, task_vars):
        """everyone: every host with an outcome in the run, the breaker's fleet (also those this act leaves to
        another, one rack at a time)."""
        problems = act_problems({"gpufleet_slurm_drain_on": args["drain_on"],
                                 "gpufleet_slurm_max_drain_percent": args["max_drain_percent"],
                                 "gpufleet_slurm_min_drain_nodes": args["min_drain_nodes"],
                                 "gpufleet_slurm_intake_reason": args["intake_reason"]})
        if problems:
            result.update(failed=True, msg=terminal_text("; ".join(problems)), lines=[])
            return
        path = run_dir(args["results_dir"], args["run_id"])
        try:  # check mode reads only: it takes no lock (and makes no lock file)
            with contextlib.nullcontext() if self._task.check_mode else run_lock(path, SLURM_ACTIONS_LOCK):
                self._act_locked(result, args, outcomes, everyone, task_vars, path)
        except (OSError, ValueError) as exc:
            result.update(failed=True, msg=terminal_text("acting in Slurm on run %s stopped: %s" % (args["run_id"], exc)))

    def _act_locked(self, result, args, outcomes, everyone, task_vars, path):
        record_path = os.path.join(path, SLURM_ACTIONS_FILE)
        earlier = this_runs_record(path)  # before Slurm is touched: a record that cannot be kept stops the act
        read = self._slurm(args, [], task_vars)
        if read.get("failed"):
            result.update(failed=True, msg=terminal_text("could not read Slurm's nodes: %s" % read.get("msg", "no message")),
                          lines=[])
            return
        states = {entry["name"]: node_state_from_dict(entry) for entry in read.get("nodes") or []}
        verdicts = [slurm_plan.HostVerdict(host, node_of(args, host), outcome["verdict"], outcome["root_cause"],
                                           tuple(outcome.get(ROOT_ACTIONS_FIELD) or ()))
                    for host, outcome in sorted(outcomes.items())]
        started = min((outcome["run_started"] for outcome in outcomes.values() if outcome["run_started"]), default="")
        records = recorded_nodes(states, lambda run_id: other_runs_record(args["results_dir"], run_id))
        plan = slurm_plan.plan(verdicts, states, records, args["run_id"], tuple(args["drain_on"]),
                               args["max_drain_percent"], args["min_drain_nodes"], args["intake_reason"], started,
                               fleet=[node_of(args, host) for host in everyone],
                               held=held_drains(states, lambda run_id: earlier if run_id == args["run_id"]
                                                else other_runs_record(args["results_dir"], run_id)))
        lines = slurm_words.plan_lines(plan)
        if self._task.check_mode:
            result.update(changed=False, lines=[terminal_text(line) for line in ["check mode: nothing changed; the plan:"] + lines])
            return
        root = os.path.abspath(args["results_dir"])
        applied, broken = [], ""
        wanted = slurm_words.changes(plan, states)
        if wanted:
            # Recorded before scontrol runs: a node must never hold this collection's reason without a record.
            earlier = with_planned_drains(earlier, args["run_id"], started, plan.planned(slurm_plan.DRAIN), states, now())
            write_text_atomically(record_path, export_json_text(earlier), root=root)
            answer = self._slurm(args, wanted, task_vars)
            broken = "the changes could not all be made: %s" % answer.get("msg", "no message") if answer.get("failed") else ""
            applied = slurm_words.with_hosts(plan, answer.get("applied") or [])
        write_text_atomically(record_path, export_json_text(updated_record(earlier, args["run_id"], plan, applied, now())),
                              root=root)
        for host, action in slurm_words.host_actions(plan, applied).items():
            outcomes[host] = with_action(outcomes[host], action)
            write_text_atomically(outcome_path(args["results_dir"], args["run_id"], host), export_json_text(outcomes[host]),
                                  root=root)
        result.update(changed=any(entry.get("done") for entry in applied), record=record_path,
                      lines=[terminal_text(line) for line in lines + slurm_words.applied_lines(applied)])
        why = slurm_words.failure(plan, applied, broken)
        if why is not None:
            result.update(failed=True, msg=terminal_text(why))

    def _slurm(self, args, changes, task_vars):
        module_args = {"changes": changes, "sinfo_path": args["sinfo_path"], "scontrol_path": args["scontrol_path"]}
        if args["slurm_conf"]:
            module_args["slurm_conf"] = args["slurm_conf"]
        return self._execute_module(module_name=MODULE, module_args=module_args, task_vars=task_vars, wrap_async=False)


def node_of(args, host):
    """The host's Slurm node name: its gpufleet_slurm_node_name, else its inventory name."""
    return str(args["node_names"].get(host) or host)


def read_outcomes(path):
    """({host: outcome}, {file: why it is not one}) for every outcome of the run, each read once."""
    directory = os.path.join(path, OUTCOMES_DIR)
    outcomes, problems = {}, {}
    for name in sorted(os.listdir(directory)):
        if not is_outcome_file_name(name):
            continue
        try:
            document = read_json_below(directory, name, OUTCOME_LIMIT_BYTES)
        except (OSError, ValueError) as exc:
            problems[name] = "outcome not acted on: %s" % exc
            continue
        why = outcome_problem(document)
        if why is None and outcome_file_name(document["host"]) != name:
            why = "its outcome file %s names host %r" % (name, document["host"])
        if why is not None:
            problems[name] = "outcome not acted on: %s" % why
            continue
        outcomes[document["host"]] = document
    return outcomes, problems


def now():
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())


def this_runs_record(path):
    """The run's own record, None where it has none yet; ValueError where it exists but cannot be kept up to date
    (writing over it would forget which nodes this run drained)."""
    try:
        document = read_json_below(path, SLURM_ACTIONS_FILE, RECORD_LIMIT_BYTES)
    except FileNotFoundError:
        return None
    except (OSError, ValueError) as exc:
        raise ValueError("its record %s cannot be read (%s); nothing was changed: move it aside only after resuming "
                         "the nodes it lists by hand" % (os.path.join(path, SLURM_ACTIONS_FILE), exc)) from None
    problem = record_problem(document)
    if problem is not None:
        raise ValueError("its record %s is not one this collection wrote (%s); nothing was changed"
                         % (os.path.join(path, SLURM_ACTIONS_FILE), problem))
    return document


def other_runs_record(results_dir, run_id):
    """Another run's record, or None (no such run here, none recorded, or unreadable: its nodes are then not this
    collection's to resume)."""
    try:
        return read_json_below(run_dir(results_dir, run_id), SLURM_ACTIONS_FILE, RECORD_LIMIT_BYTES)
    except (OSError, ValueError):
        return None
