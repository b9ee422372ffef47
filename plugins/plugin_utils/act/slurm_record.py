# -*- coding: utf-8 -*-
# Copyright: gpufleet.validation contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""What acting in Slurm did in a run, kept as <run>/slurm-actions.json: the record that lets a later run resume a
node this collection drained, and nothing else. A drained node's reason names the run that drained it
("gpufleet <run id>: ..."); the node is this collection's to resume only if that run's record lists it with that
very reason. Pure: reading and writing the file is the caller's."""
from __future__ import annotations

from typing import Any, Callable, Dict, List, Mapping, Optional, Set

from ...module_utils.slurm_node_states import NodeState
from .slurm_plan import REASON_PREFIX, Action, Plan

RECORD_SCHEMA_VERSION = "1"


def drained_by_run(reason: str) -> Optional[str]:
    """The run id a reason of this collection names ("gpufleet <run id>: cause"), or None."""
    if not reason.startswith(REASON_PREFIX):
        return None
    run_id, colon, unused_cause = reason[len(REASON_PREFIX):].partition(":")
    return run_id if colon and run_id else None


def recorded_nodes(states: Mapping[str, NodeState], read_record: Callable[[str], Optional[Mapping[str, Any]]]) -> Set[str]:
    """The drained nodes whose reason names a run whose record lists the node drained with that reason.
    read_record(run_id) gives the run's record, or None (no record, another results directory, a run id that is no
    run id: the node is then not ours to resume)."""
    found: Set[str] = set()
    for state in states.values():
        run_id = drained_by_run(state.reason) if state.drained else None
        if run_id is None:
            continue
        record = read_record(run_id)
        entries = record.get("drained") if isinstance(record, Mapping) else None
        if any(isinstance(entry, Mapping) and entry.get("node") == state.name and entry.get("reason") == state.reason
               for entry in entries or []):
            found.add(state.name)
    return found


def action_dict(action: Action) -> Dict[str, str]:
    return {"host": action.host, "node": action.node, "action": action.action, "reason": action.reason}


def updated_record(earlier: Optional[Mapping[str, Any]], run_id: str, plan: Plan, applied: List[Mapping[str, Any]],
                   when: str) -> Dict[str, Any]:
    """The run's record after acting once more: every drain and resume Slurm confirmed (applied entries with done),
    added to what an earlier act on the same run recorded, and this act's plan and breaker."""
    record: Dict[str, Any] = {"schema_version": RECORD_SCHEMA_VERSION, "run_id": run_id, "drained": [], "resumed": [],
                              "acts": []}
    if isinstance(earlier, Mapping) and earlier.get("schema_version") == RECORD_SCHEMA_VERSION:
        for key in ("drained", "resumed", "acts"):
            if isinstance(earlier.get(key), list):
                record[key] = list(earlier[key])
    for entry in applied:
        if not entry.get("done"):
            continue
        kind = "drained" if entry.get("action") == "drain" else "resumed"
        record[kind].append({"node": entry.get("node"), "host": entry.get("host"), "reason": entry.get("reason"),
                             "at": when})
    record["acts"].append({"at": when, "tripped": plan.breaker.tripped, "breaker": list(plan.breaker.words),
                           "actions": [action_dict(action) for action in plan.actions], "applied": list(applied)})
    return record
