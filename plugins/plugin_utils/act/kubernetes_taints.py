# -*- coding: utf-8 -*-
# Copyright: gpufleet.validation contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""A Kubernetes node's taints after a run (issue 46): this collection's own taint added, replaced or removed by the
host's outcome, every other taint kept as it is and where it is, and the JSON merge patch that sets them.

``spec.taints`` has no patch strategy, so any patch that names it replaces the whole list: the new list is the node's
current one, merged here, and the patch carries the node's ``metadata.resourceVersion``, so that the API server refuses
it (409 Conflict) where the node changed since it was read instead of dropping a taint added meanwhile (docs/acting.md).

Pure: it reads the node as ``kubernetes.core.k8s_info`` returns it and the host's outcome (outcome.py), and changes
nothing.
"""
from __future__ import annotations

import hashlib
import re
from typing import Any, Dict, List, Mapping, Optional, Sequence

from ansible_collections.gpufleet.validation.plugins.plugin_utils.act.outcome import ROOT_ACTIONS_FIELD, outcome_problem
from ansible_collections.gpufleet.validation.plugins.plugin_utils.judge.busy import BUSY_ACTION
from ansible_collections.gpufleet.validation.plugins.plugin_utils.judge.model import VERDICTS

TAINT_KEY = "gpufleet.validation/failed"
TAINT_EFFECT = "NoSchedule"
# The full run id and when that run started: a taint value holds at most 63 characters, and a pass untaints only a
# node that a run as old or older tainted (as Slurm resumes, slurm_plan.decide).
RUN_ID_ANNOTATION = "gpufleet.validation/run-id"
RUN_STARTED_ANNOTATION = "gpufleet.validation/run-started"
TAINT_ON = ("fail", "error")
UNTAINT_ON = ("pass", "warn")
TAINT, UNTAINT, LEAVE = "taint", "untaint", "leave"
# A taint's value is a label value (Kubernetes' apimachinery validation.IsValidLabelValue).
LABEL_VALUE_MAX_CHARS = 63
LABEL_VALUE = re.compile(r"(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?")
_NOT_IN_LABEL_VALUE = re.compile(r"[^-A-Za-z0-9_.]+")
_NOT_ALPHANUMERIC_AT_ENDS = re.compile(r"^[^A-Za-z0-9]+|[^A-Za-z0-9]+$")
HASH_CHARS = 10


def is_label_value(text: str) -> bool:
    return len(text) <= LABEL_VALUE_MAX_CHARS and LABEL_VALUE.fullmatch(text) is not None


def taint_value(run_id: str) -> str:
    """The run id where it is a valid taint value; otherwise its characters that are (others become '-', cut to fit),
    then '-' and the first HASH_CHARS hex digits of its SHA-256, so that two run ids never share a value by the cut."""
    if is_label_value(run_id):
        return run_id
    digest = hashlib.sha256(run_id.encode("utf-8", "surrogatepass")).hexdigest()[:HASH_CHARS]
    readable = _NOT_IN_LABEL_VALUE.sub("-", run_id)[:LABEL_VALUE_MAX_CHARS - HASH_CHARS - 1]
    readable = _NOT_ALPHANUMERIC_AT_ENDS.sub("", readable)
    return "%s-%s" % (readable, digest) if readable else digest


def _ours(taint: Any) -> bool:
    return isinstance(taint, Mapping) and taint.get("key") == TAINT_KEY


def _node_parts(node: Mapping[str, Any]):
    metadata = node.get("metadata") or {}
    spec = node.get("spec") or {}
    if not isinstance(metadata, Mapping) or not isinstance(spec, Mapping):
        raise ValueError("the node's metadata and spec must be mappings")
    name, version = metadata.get("name"), metadata.get("resourceVersion")
    if not isinstance(name, str) or not name or not isinstance(version, str) or not version:
        raise ValueError("the node has no metadata.name or metadata.resourceVersion: pass the node as "
                         "kubernetes.core.k8s_info returns it (one of its resources)")
    taints = spec.get("taints") or []
    annotations = metadata.get("annotations") or {}
    if not isinstance(taints, list) or not isinstance(annotations, Mapping):
        raise ValueError("the node's spec.taints must be a list and its metadata.annotations a mapping")
    return name, version, list(taints), annotations


def _plan(action: str, why: str, name: str = "", version: str = "", current: Sequence[Any] = (),
          taints: Optional[List[Any]] = None, annotations: Optional[Dict[str, Optional[str]]] = None) -> Dict[str, Any]:
    """changed: whether the node must be patched; patch: the JSON merge patch (None when nothing changes)."""
    taints = list(current) if taints is None else taints
    changed = taints != list(current) or bool(annotations)
    patch = None
    if changed:
        patch = {"apiVersion": "v1", "kind": "Node",
                 "metadata": {"name": name, "resourceVersion": version, "annotations": dict(annotations or {})},
                 "spec": {"taints": taints}}
    return {"action": action, "why": why, "changed": changed, "taints": taints, "patch": patch}


def _verdict_list(name: str, verdicts: Sequence[str]) -> List[str]:
    if isinstance(verdicts, str) or not all(verdict in VERDICTS for verdict in verdicts):
        raise ValueError("%s must be a list of verdicts (%s), not %r" % (name, ", ".join(VERDICTS), verdicts))
    return list(verdicts)


def node_taints(node: Optional[Mapping[str, Any]], outcome: Mapping[str, Any], taint_on: Sequence[str] = TAINT_ON,
                untaint_on: Sequence[str] = UNTAINT_ON) -> Dict[str, Any]:
    """What to do with the node of a host with this outcome: {action: taint, untaint or leave; why; changed; taints:
    the node's whole new list; patch: the merge patch to send, or None}. node: as kubernetes.core.k8s_info returns it,
    or None where Kubernetes has no such node. A host whose root causes are all a busy GPU is left, whatever its
    verdict, as in Slurm; a taint put by a run that started after this one (or at a time unknown) is left to that run."""
    taint_on, untaint_on = _verdict_list("taint_on", taint_on), _verdict_list("untaint_on", untaint_on)
    if set(taint_on) & set(untaint_on):
        raise ValueError("a verdict cannot both taint and untaint: %s" % ", ".join(sorted(set(taint_on) & set(untaint_on))))
    problem = outcome_problem(outcome)
    if problem or not isinstance(outcome.get("run_id"), str) or not outcome["run_id"]:
        raise ValueError("not a host's outcome (gpufleet_outcome): %s" % (problem or "no run_id"))
    verdict, run_id, started = outcome["verdict"], outcome["run_id"], outcome["run_started"]
    if not node:
        return _plan(LEAVE, "Kubernetes has no node of this name")
    name, version, current, annotations = _node_parts(node)
    ours = [taint for taint in current if _ours(taint)]
    actions = outcome.get(ROOT_ACTIONS_FIELD) or []
    if actions and all(action == BUSY_ACTION for action in actions):
        return _plan(LEAVE, "%s in run %s, but every root cause is a busy GPU: a busy GPU is not a broken one, never "
                     "tainted for it; re-run when the GPU is idle" % (verdict, run_id), name, version, current)
    held_by, held_started = annotations.get(RUN_ID_ANNOTATION), annotations.get(RUN_STARTED_ANNOTATION)
    held_started = held_started if isinstance(held_started, str) else ""
    if ours and held_by != run_id and verdict in taint_on + untaint_on and not (started and held_started and started >= held_started):
        why = ("%s in run %s, which started %s, but the taint %s was put by run %s, which started %s: only a run as new "
               "or newer changes it" % (verdict, run_id, started or "at an unknown time", TAINT_KEY, held_by or "(none recorded)",
                                        held_started or "at an unknown time"))
        return _plan(LEAVE, why, name, version, current)
    if verdict in taint_on:
        taint = {"key": TAINT_KEY, "value": taint_value(run_id), "effect": TAINT_EFFECT}
        kept = next((old for old in ours if dict(old) == taint), taint)
        at = current.index(ours[0]) if ours else len(current)
        taints = [old for old in current[:at] if not _ours(old)] + [kept] + [old for old in current[at:] if not _ours(old)]
        wanted = {RUN_ID_ANNOTATION: run_id, RUN_STARTED_ANNOTATION: started}
        changes = {key: value for key, value in wanted.items() if annotations.get(key) != value}
        return _plan(TAINT, "%s in run %s: %s" % (verdict, run_id, outcome["root_cause"]), name, version, current, taints,
                     changes)
    if verdict in untaint_on:
        taints = [old for old in current if not _ours(old)]
        # JSON merge patch: null removes the key.
        changes = {key: None for key in (RUN_ID_ANNOTATION, RUN_STARTED_ANNOTATION) if key in annotations}
        why = "%s in run %s%s" % (verdict, run_id, "" if ours else ": holds no taint %s" % TAINT_KEY)
        return _plan(UNTAINT, why, name, version, current, taints, changes)
    return _plan(LEAVE, "%s in run %s: neither tainted nor untainted (taint_on: %s; untaint_on: %s)"
                 % (verdict, run_id, ", ".join(taint_on), ", ".join(untaint_on)), name, version, current)
