# -*- coding: utf-8 -*-
# Copyright: gpufleet.validation contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""A host's outcome: its verdict, its root cause and what was done about it, for the user's own tasks (a Kubernetes
taint, a ticket, another scheduler). The one definition of the document that the report writes to
<run>/outcomes/<host>.json, that gpufleet.validation.act completes with the action, and that the playbook gives each
host as its ``gpufleet_outcome`` variable (docs/acting.md). Pure."""
from __future__ import annotations

from typing import Any, Dict, List, Mapping, Optional, Sequence

OUTCOME_SCHEMA_VERSION = "1"
NO_SCHEDULER = "none"
NOT_ACTED = "none"
OUTCOME_FIELDS = ("schema_version", "run_id", "run_started", "host", "verdict", "root_cause", "reasons", "gate", "dossier",
                  "action")
# Written by this version, read where present: the action of each root cause (judge/rules.py ACTIONS), worst first; an
# act never drains a host whose root causes all say rerun_when_idle (another job on the GPU: a busy GPU, not a broken one).
ROOT_ACTIONS_FIELD = "root_actions"
ACTION_FIELDS = ("scheduler", "node", "planned", "done", "why")


def host_outcome(run_id: str, run_started: str, host: str, verdict: str, reasons: List[str], gate: bool,
                 dossier: str, root_actions: Sequence[str] = ()) -> Dict[str, Any]:
    """The outcome as the report knows it: nothing acted on yet. run_started: when the run started (ISO 8601 UTC);
    root_cause is the verdict's first (worst) reason, "" for a host that passes; root_actions: the action of each of
    the verdict's root causes, in the order of reasons."""
    return {"schema_version": OUTCOME_SCHEMA_VERSION, "run_id": run_id, "run_started": run_started, "host": host,
            "verdict": verdict,
            "root_cause": reasons[0] if reasons else "", "reasons": list(reasons), ROOT_ACTIONS_FIELD: list(root_actions),
            "gate": bool(gate),
            "dossier": dossier,
            "action": action_part(NO_SCHEDULER, None, NOT_ACTED, False,
                                  "no scheduler was asked to act (gpufleet_act is not set)")}


def action_part(scheduler: str, node: Optional[str], planned: str, done: bool, why: str) -> Dict[str, Any]:
    """scheduler: none or slurm; node: the scheduler's name for the host; planned: none, drain, resume or leave;
    done: whether the scheduler now shows the change; why: the reason set (drain) or why it was planned or not done."""
    return {"scheduler": scheduler, "node": node, "planned": planned, "done": bool(done), "why": why}


def with_action(outcome: Mapping[str, Any], action: Mapping[str, Any]) -> Dict[str, Any]:
    document = dict(outcome)
    document["action"] = dict(action)
    return document


def outcome_problem(document: Any) -> Optional[str]:
    """Why a stored outcome cannot be acted on (a file edited by hand, or from another version), or None."""
    if not isinstance(document, Mapping):
        return "not a JSON object"
    missing = [name for name in OUTCOME_FIELDS if name not in document]
    if missing:
        return "missing %s" % ", ".join(missing)
    if document.get("schema_version") != OUTCOME_SCHEMA_VERSION:
        return "schema_version %r, this collection reads %r" % (document.get("schema_version"), OUTCOME_SCHEMA_VERSION)
    if not all(isinstance(document.get(name), str) for name in ("host", "verdict", "root_cause", "run_started")):
        return "host, verdict, root_cause and run_started must be text"
    actions = document.get(ROOT_ACTIONS_FIELD, [])
    if not isinstance(actions, list) or not all(isinstance(action, str) for action in actions):
        return "%s must be a list of text" % ROOT_ACTIONS_FIELD
    return None
