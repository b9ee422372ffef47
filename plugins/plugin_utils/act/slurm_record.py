# -*- coding: utf-8 -*-
# Copyright: gpufleet.validation contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""What acting in Slurm did in a run, kept as <run>/slurm-actions.json: the record that lets a later run resume a
node this collection drained, and nothing else. A drained node's reason names the run that drained it
("gpufleet <run id>: ..."); the node is this collection's to resume only if that run's record lists it with that
very reason. A drain is recorded before scontrol is asked to make it (unconfirmed), so a node can never hold this
collection's reason without a record; Slurm's confirmation is added after. Pure: reading, locking and writing the
file are the caller's."""
from __future__ import annotations

from typing import Any, Callable, Dict, Iterator, Mapping, Optional, Sequence, Tuple

from ...module_utils.slurm_node_states import NodeState
from .slurm_plan import DRAIN, RESUME, Action, Plan, drained_by_run

RECORD_SCHEMA_VERSION = "1"


def _recorded_drains(states: Mapping[str, NodeState], read_record: Callable[[str], Optional[Mapping[str, Any]]]
                     ) -> Iterator[Tuple[NodeState, str, Mapping[str, Any]]]:
    """(node state, run id, the record's entry) for each drained node whose reason names a run whose record lists the
    node with that very reason; each run's record is read once."""
    records: Dict[str, Optional[Mapping[str, Any]]] = {}
    for state in states.values():
        run_id = drained_by_run(state.reason) if state.drained else None
        if run_id is None:
            continue
        if run_id not in records:
            records[run_id] = read_record(run_id)
        entries = records[run_id].get("drained") if isinstance(records[run_id], Mapping) else None
        for entry in entries if isinstance(entries, list) else []:
            if isinstance(entry, Mapping) and entry.get("node") == state.name and entry.get("reason") == state.reason:
                yield state, run_id, entry


def recorded_nodes(states: Mapping[str, NodeState],
                   read_record: Callable[[str], Optional[Mapping[str, Any]]]) -> Dict[str, str]:
    """{node: when the run that drained it started, "" unknown} for the drained nodes whose reason names a run whose
    record lists the node with that reason. read_record(run_id) gives the run's record, or None (no record, another results directory, a run
    id that is no run id: the node is then not this collection's to resume)."""
    return {state.name: str(entry.get("run_started") or "") for state, unused_run, entry in _recorded_drains(states, read_record)}


def held_drains(states: Mapping[str, NodeState],
                read_record: Callable[[str], Optional[Mapping[str, Any]]]) -> Dict[str, str]:
    """{node: the run that drained it} for every node this collection holds out of service, whatever run drained it:
    drained, its reason naming a run whose record (read_record(run_id), this run's included) lists the node with that
    reason, and not handed over drained for acceptance (intake: it was out of service already). They count against
    the breaker of every act, so slicing a night into runs (or a run into racks) drains no more than the share."""
    return {state.name: run_id for state, run_id, entry in _recorded_drains(states, read_record) if not entry.get("intake")}


def _base(earlier: Optional[Mapping[str, Any]], run_id: str) -> Dict[str, Any]:
    record: Dict[str, Any] = {"schema_version": RECORD_SCHEMA_VERSION, "run_id": run_id, "drained": [], "resumed": [],
                              "acts": []}
    if isinstance(earlier, Mapping):
        for key in ("drained", "resumed", "acts"):
            if isinstance(earlier.get(key), list):
                record[key] = [dict(entry) for entry in earlier[key] if isinstance(entry, Mapping)]
    return record


def with_planned_drains(earlier: Optional[Mapping[str, Any]], run_id: str, run_started: str, drains: Sequence[Action],
                        states: Mapping[str, NodeState], when: str) -> Dict[str, Any]:
    """The record before scontrol runs: each drain to make listed, not yet confirmed, with when this run started (what
    a later run's pass is compared with) and whether the node was handed over drained (intake: it was out of service
    already)."""
    record = _base(earlier, run_id)
    listed = {(entry.get("node"), entry.get("reason")) for entry in record["drained"]}
    record["drained"] += [{"node": action.node, "host": action.host, "reason": action.reason, "at": when,
                           "run_started": run_started, "confirmed": False,
                           "intake": action.node in states and states[action.node].drained}
                          for action in drains if (action.node, action.reason) not in listed]
    return record


def updated_record(earlier: Optional[Mapping[str, Any]], run_id: str, plan: Plan,
                   applied: Sequence[Mapping[str, Any]], when: str) -> Dict[str, Any]:
    """The record after acting once more: each drain Slurm confirmed marked so, each confirmed resume added, and this
    act's breaker and changes (the nodes it would have drained, where the breaker tripped)."""
    record = _base(earlier, run_id)
    confirmed = {(entry.get("node"), entry.get("reason")) for entry in applied
                 if entry.get("done") and entry.get("action") == DRAIN}
    for entry in record["drained"]:
        if (entry.get("node"), entry.get("reason")) in confirmed:
            entry["confirmed"] = True
    record["resumed"] += [{"node": entry.get("node"), "host": entry.get("host"), "reason": entry.get("expect_reason"),
                           "at": when} for entry in applied if entry.get("done") and entry.get("action") == RESUME]
    act: Dict[str, Any] = {"at": when, "tripped": plan.breaker.tripped, "breaker": list(plan.breaker.words),
                           "applied": [dict(entry) for entry in applied]}
    if plan.breaker.tripped:
        act["would_have_drained"] = [action_dict(action) for action in plan.planned(DRAIN)]
    record["acts"].append(act)
    return record


def action_dict(action: Action) -> Dict[str, str]:
    return {"host": action.host, "node": action.node, "action": action.action, "reason": action.reason}


def record_problem(document: Any) -> Optional[str]:
    """Why a record that exists cannot be kept up to date (it would be overwritten and its drains forgotten), or None."""
    if not isinstance(document, Mapping):
        return "not a JSON object"
    if document.get("schema_version") != RECORD_SCHEMA_VERSION:
        return "schema_version %r, this collection writes %r" % (document.get("schema_version"), RECORD_SCHEMA_VERSION)
    if not all(isinstance(document.get(key), list) for key in ("drained", "resumed", "acts")):
        return "drained, resumed and acts must be lists"
    return None
