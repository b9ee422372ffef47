# -*- coding: utf-8 -*-
# Copyright: gpufleet.validation contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""What acting on a run's verdicts in Slurm would change (issue 36): the nodes to drain, the nodes to resume, the ones
left alone and why, and the circuit breaker that stops every change when too many nodes would be drained at once.

Pure: it reads the hosts' verdicts, Slurm's node states (``scontrol show nodes --json`` or ``sinfo --json``) and the nodes this collection drained
(its records), and changes nothing. A node is resumed only when its drain reason carries this collection's prefix
**and** a record says this collection drained it; a node drained by anyone else is never touched.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Dict, Iterable, List, Mapping, Optional, Sequence, Tuple

from ansible_collections.gpufleet.validation.plugins.module_utils.slurm_node_states import NodeState, is_node_name
from ansible_collections.gpufleet.validation.plugins.plugin_utils.judge.busy import BUSY_ACTION

REASON_PREFIX = "gpufleet "
# Slurm keeps the reason as given; one line, short enough to read in `sinfo -R`.
REASON_MAX_CHARS = 200
DRAIN, RESUME, LEAVE = "drain", "resume", "leave"


@dataclass(frozen=True)
class HostVerdict:
    """host: the inventory name; node: its Slurm node name; verdict: pass, warn, fail, error or unreachable;
    root_cause: the verdict's first reason, one line; root_actions: the action of each root cause ("" unknown: an
    outcome written before they were)."""

    host: str
    node: str
    verdict: str
    root_cause: str
    root_actions: Tuple[str, ...] = ()

    @property
    def only_busy(self) -> bool:
        """Every root cause is another job on a GPU (a busy GPU, not a broken one): never drained for it."""
        return bool(self.root_actions) and all(action == BUSY_ACTION for action in self.root_actions)


@dataclass(frozen=True)
class Action:
    """action: drain, resume or leave; reason: the Slurm reason to set (drain) or why (resume, leave)."""

    host: str
    node: str
    action: str
    reason: str


@dataclass(frozen=True)
class Breaker:
    """tripped: the run's drains exceed an allowance; words: each allowance against its count, in words."""

    tripped: bool
    words: Tuple[str, ...]


@dataclass(frozen=True)
class Plan:
    actions: Tuple[Action, ...]
    breaker: Breaker

    def planned(self, kind: str) -> List[Action]:
        return [action for action in self.actions if action.action == kind]

    def changes(self) -> List[Action]:
        """What to carry out: every drain and resume, or nothing where the breaker tripped."""
        if self.breaker.tripped:
            return []
        return [action for action in self.actions if action.action in (DRAIN, RESUME)]


def drain_reason(run_id: str, root_cause: str) -> str:
    """'gpufleet <run id>: <root cause>' on one line: control characters become spaces, '"' becomes "'" (scontrol
    strips a leading or trailing '"' from a reason, so the node would not hold the reason recorded), and a long cause
    is cut."""
    cause = " ".join("".join(char if char.isprintable() else " " for char in root_cause).split()) or "no reason given"
    reason = ("%s%s: %s" % (REASON_PREFIX, run_id, cause)).replace('"', "'")
    return reason if len(reason) <= REASON_MAX_CHARS else reason[:REASON_MAX_CHARS - 3] + "..."


def drained_by_run(reason: str) -> Optional[str]:
    """The run id a reason of this collection names ("gpufleet <run id>: cause"), or None."""
    if not reason.startswith(REASON_PREFIX):
        return None
    run_id, colon, unused_cause = reason[len(REASON_PREFIX):].partition(":")
    return run_id if colon and run_id else None


def ours(state: NodeState) -> bool:
    return drained_by_run(state.reason) is not None


def held_by_someone_else(state: NodeState, handed_over: bool) -> bool:
    """Out of service, or given a reason, by anyone but this collection: an operator's drain or DOWN, Slurm's own
    NOT_RESPONDING or FAIL. Such a node is never drained over, resumed or given another reason."""
    return not handed_over and not ours(state) and (state.drained or state.down or bool(state.reason))


def decide(host: HostVerdict, state: Optional[NodeState], records: Mapping[str, str], run_id: str,
           drain_on: Sequence[str], intake_reason: str = "", run_started: str = "") -> Action:
    """One host's action and why. records: {node: when the run that drained it started, "" unknown} for the nodes
    whose drain this collection recorded under the reason they hold now. intake_reason: a drain reason the operator
    gives new nodes (slurm.conf State=DRAIN Reason=...) to hand them to this collection: resumed when they pass, their
    reason replaced by the cause when they fail (also when down: they were handed over out of service). run_started:
    when the run being acted on started (ISO 8601 UTC), "" unknown: a pass resumes a node another run drained only if
    this run started no earlier than that run (its evidence is as new or newer)."""
    if not is_node_name(host.node):
        return Action(host.host, host.node, LEAVE, "%r is not one Slurm node's name (letters, digits, '.', '_', '-'; "
                      "not ALL): left alone" % host.node)
    if state is None:
        return Action(host.host, host.node, LEAVE, "Slurm has no node %r (set gpufleet_slurm_node_name for this host)" % host.node)
    handed_over = bool(intake_reason) and state.drained and state.reason == intake_reason
    if held_by_someone_else(state, handed_over):
        return Action(host.host, host.node, LEAVE, "%s by someone else (%s): never touched"
                      % ("drained" if state.drained else "out of service" if state.down else "given a reason",
                         state.reason or "no reason"))
    if host.verdict in drain_on and host.only_busy:
        return Action(host.host, host.node, LEAVE, "verdict %s only because another job computes on its GPUs (%s): a busy GPU "
                      "is not a broken one, never drained for it; re-run when the GPU is idle" % (host.verdict, host.root_cause))
    if host.verdict in drain_on:
        if handed_over or not (state.drained or state.down):
            return Action(host.host, host.node, DRAIN, drain_reason(run_id, host.root_cause))
        return Action(host.host, host.node, LEAVE, "already %s with this collection's reason: %s"
                      % ("drained" if state.drained else "out of service", state.reason))
    if host.verdict != "pass":
        return Action(host.host, host.node, LEAVE, "verdict %s: neither drained nor resumed (drained on: %s)"
                      % (host.verdict, ", ".join(drain_on)))
    if handed_over:
        return Action(host.host, host.node, RESUME, "passes; handed over for acceptance (%s)" % state.reason)
    if not state.drained:
        return Action(host.host, host.node, LEAVE, "passes; down (%s): left to Slurm" % state.reason
                      if state.down else "passes and is in service")
    if host.node not in records:
        return Action(host.host, host.node, LEAVE, "passes; its reason starts with %r but this collection holds no "
                      "record of draining it: not resumed" % REASON_PREFIX)
    drainer, drainer_started = drained_by_run(state.reason), records[host.node]
    if drainer != run_id and not (run_started and drainer_started and run_started >= drainer_started):
        return Action(host.host, host.node, LEAVE, "passes in run %s, which started %s, but run %s, which started %s, "
                      "drained it: not resumed (a pass in a run as new or newer resumes it)"
                      % (run_id, run_started or "at an unknown time", drainer, drainer_started or "at an unknown time"))
    return Action(host.host, host.node, RESUME, "passes; drained by this collection (%s)" % state.reason)


def allowance(size: int, max_pct: float, min_nodes: int) -> int:
    """How many of ``size`` nodes one run may drain: max_pct of them rounded down, at least min_nodes."""
    return max(min_nodes, int(math.floor(size * max_pct / 100.0 + 1e-9)))


def breaker(actions: Sequence[Action], fleet: Sequence[str], states: Mapping[str, NodeState],
            held: Mapping[str, str], run_id: str, max_pct: float, min_nodes: int) -> Breaker:
    """Trips where this act drains a node in service and the drains then exceed the fleet's allowance (of the run's
    nodes that Slurm has) or a partition's (of its nodes in Slurm). The drains: the nodes this act drains that are in
    service (a node handed over drained for acceptance is out already), and ``held``, {node: run id}, the nodes this
    collection holds out of service (an earlier act on this run, or an earlier run: slurm_record.held_drains), less
    those this act resumes. So acting rack by rack, or slicing a night into runs, drains no more than the share, and
    an act that drains nothing never trips (a re-judged run's resumes go through)."""
    new = {action.node for action in actions if action.action == DRAIN
           and (action.node not in states or not states[action.node].drained)}
    resumed = {action.node for action in actions if action.action == RESUME}
    kept = {node: drainer for node, drainer in held.items() if node not in resumed}
    by_earlier_runs = {node for node, drainer in kept.items() if drainer != run_id}
    scope = set(fleet) & set(states)
    drained = new | (set(kept) & scope)
    words, tripped = [], False
    allowed = allowance(len(scope), max_pct, min_nodes)
    over = bool(new) and len(drained) > allowed
    tripped |= over
    words.append("fleet: %d of %d host(s) to drain, %d allowed (%g %%, at least %d)%s%s"
                 % (len(drained), len(scope), allowed, max_pct, min_nodes, _already(by_earlier_runs & scope, len(scope)),
                    ": OVER" if over else ""))
    members: Dict[str, List[str]] = {}
    for state in states.values():
        for partition in state.partitions:
            members.setdefault(partition, []).append(state.name)
    for partition in sorted(members):
        inside = set(members[partition])
        count = len((new | set(kept)) & inside)
        if not count:
            continue
        allowed = allowance(len(inside), max_pct, min_nodes)
        over = bool(new & inside) and count > allowed
        tripped |= over
        words.append("partition %s: %d of %d node(s) to drain, %d allowed%s%s"
                     % (partition, count, len(inside), allowed, _already(by_earlier_runs & inside, len(inside)),
                        ": OVER" if over else ""))
    return Breaker(tripped, tuple(words))


def _already(nodes: Iterable[str], size: int) -> str:
    nodes = sorted(nodes)
    return " (already %d of %d drained by earlier runs: %s)" % (len(nodes), size, ", ".join(nodes)) if nodes else ""


def plan(verdicts: Sequence[HostVerdict], states: Mapping[str, NodeState], records: Mapping[str, str], run_id: str,
         drain_on: Sequence[str] = ("fail",), max_pct: float = 10.0, min_nodes: int = 1, intake_reason: str = "",
         run_started: str = "", fleet: Optional[Sequence[str]] = None, held: Optional[Mapping[str, str]] = None) -> Plan:
    """Every host's action, and the breaker over the drains. fleet: the Slurm node names of every host of the run
    (default: of the hosts acted on); held: {node: run id} of the nodes this collection holds out of service, drained
    by an earlier act on this run or by an earlier run (slurm_record.held_drains). Two hosts naming one node are an
    error of the inventory: that node is left alone."""
    counts: Dict[str, int] = {}
    for host in verdicts:
        counts[host.node] = counts.get(host.node, 0) + 1
    actions = []
    for host in verdicts:
        if counts[host.node] > 1:
            actions.append(Action(host.host, host.node, LEAVE, "%d inventory hosts name the Slurm node %r: left alone"
                                  % (counts[host.node], host.node)))
            continue
        actions.append(decide(host, states.get(host.node), records, run_id, drain_on, intake_reason, run_started))
    nodes = [host.node for host in verdicts if counts[host.node] == 1] if fleet is None else list(fleet)
    nodes = [node for node in nodes if is_node_name(node)]
    return Plan(tuple(actions), breaker(actions, nodes, states, held or {}, run_id, max_pct, min_nodes))
