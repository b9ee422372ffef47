# -*- coding: utf-8 -*-
# Copyright: gpufleet.validation contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""What acting in Slurm says and hands on: the changes the module is asked to make, each host's action for its outcome,
the lines for the terminal and why the step fails. Pure: the plan and what the module answered, nothing else."""
from __future__ import annotations

from typing import Any, Dict, List, Mapping, Optional, Sequence

from ...module_utils.slurm_node_states import NodeState
from .outcome import action_part
from .slurm_plan import DRAIN, Plan

SCHEDULER = "slurm"


def changes(plan: Plan, states: Mapping[str, NodeState]) -> List[Dict[str, Optional[str]]]:
    """The module's changes: each with the reason the node holds now (a resume, a drain of a node handed over), so that
    the module makes it only to a node still as the plan saw it."""
    return [{"node": action.node, "action": action.action, "reason": action.reason if action.action == DRAIN else None,
             "expect_reason": states[action.node].reason if action.node in states and states[action.node].drained else None}
            for action in plan.changes()]


def with_hosts(plan: Plan, applied: Sequence[Mapping[str, Any]]) -> List[Dict[str, Any]]:
    """The module's answers, each with the inventory host of its node."""
    hosts = {action.node: action.host for action in plan.actions}
    return [dict(entry, host=hosts.get(entry.get("node"))) for entry in applied]


def host_actions(plan: Plan, applied: Sequence[Mapping[str, Any]]) -> Dict[str, Dict[str, Any]]:
    """{host: the action part of its outcome}: what was planned, whether Slurm shows it done, and why."""
    answers = {entry.get("node"): entry for entry in applied}
    actions = {}
    for action in plan.actions:
        answer = answers.get(action.node)
        why = action.reason if answer is None else "%s (%s)" % (action.reason, answer.get("why"))
        if plan.breaker.tripped and action.action == DRAIN:
            why = "not drained: the circuit breaker tripped (%s)" % "; ".join(plan.breaker.words)
        actions[action.host] = action_part(SCHEDULER, action.node, action.action, bool(answer and answer.get("done")), why)
    return actions


def plan_lines(plan: Plan) -> List[str]:
    """The plan: one line per host, then the breaker's counts."""
    return (["%s %s (host %s): %s" % (action.action, action.node, action.host, action.reason) for action in plan.actions]
            + ["circuit breaker: %s" % word for word in plan.breaker.words])


def applied_lines(applied: Sequence[Mapping[str, Any]]) -> List[str]:
    return ["%s %s: %s" % (entry.get("action"), entry.get("node"), entry.get("why")) for entry in applied]


def failure(plan: Plan, applied: Sequence[Mapping[str, Any]], broken: str) -> Optional[str]:
    """Why the step fails, or None: the breaker tripped (naming each node it would have drained and why), the module
    could not make the changes, or one was not made."""
    if plan.breaker.tripped:
        return ("circuit breaker tripped: nothing was drained or resumed. %s. Would have drained: %s. If the verdicts "
                "are right, drain by hand or raise gpufleet_slurm_max_drain_percent for one run; if not, fix the "
                "baseline or rule and re-judge (playbooks/report.yml)"
                % ("; ".join(plan.breaker.words), "; ".join("%s (host %s): %s" % (action.node, action.host, action.reason)
                                                            for action in plan.planned(DRAIN))))
    undone = applied_lines([entry for entry in applied if not entry.get("done")])
    if broken or undone:
        return "not every change was made: %s" % "; ".join(([broken] if broken else []) + undone)
    return None
