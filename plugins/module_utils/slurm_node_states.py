# -*- coding: utf-8 -*-
# Copyright: gpufleet.validation contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Slurm's nodes as ``scontrol show nodes --json`` (23.02 and later) and ``sinfo --json`` (21.08 to 22.05) list
them, and which names name one node. Pure: read by the module that runs sinfo and scontrol on the Slurm host, and by
the plan on the controller (plugins/plugin_utils/act/slurm_plan.py)."""
from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, Dict, Mapping, Set, Tuple

# One node's name: Slurm reads a comma as a list and brackets as a range ("gpu[01-64]"), so a name holding either
# would change many nodes; a space or '=' would be read as another of scontrol's words.
NODE_NAME_PATTERN = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$")
# scontrol reads NodeName=ALL, in any case, as every node (tried on 22.05.8): never one node's name.
EVERY_NODE_KEYWORD = "all"
DRAIN_WORDS = frozenset(("DRAIN", "DRAINED", "DRAINING"))
# A node out of service without the DRAIN flag: an operator or Slurm took it out (DOWN "admin: RMA", FAIL,
# NOT_RESPONDING), it is powered down or rebooting, or not yet in the cluster.
OUT_OF_SERVICE_WORDS = frozenset(("DOWN", "FAIL", "FAILING", "NOT_RESPONDING", "POWERED_DOWN", "POWERING_DOWN",
                                  "POWER_DOWN", "POWERING_UP", "REBOOT_REQUESTED", "REBOOT_ISSUED", "FUTURE",
                                  "UNKNOWN"))
# A node where a job runs (all its CPUs, some of them, or a job ending): only the probes that cannot disturb a job run
# there (docs/acting.md, "A node where a job runs").
JOB_WORDS = frozenset(("ALLOCATED", "MIXED", "COMPLETING"))


@dataclass(frozen=True)
class NodeState:
    """A Slurm node: drained means the DRAIN flag is set (draining or drained); down, any of OUT_OF_SERVICE_WORDS;
    job_running, any of JOB_WORDS (allocated or mixed)."""

    name: str
    drained: bool
    reason: str
    partitions: Tuple[str, ...]
    down: bool = False
    job_running: bool = False

    def to_dict(self) -> Dict[str, Any]:
        return {"name": self.name, "drained": self.drained, "reason": self.reason, "partitions": list(self.partitions),
                "down": self.down, "job_running": self.job_running}


def is_node_name(name: Any) -> bool:
    return isinstance(name, str) and bool(NODE_NAME_PATTERN.match(name)) and name.lower() != EVERY_NODE_KEYWORD


def node_states(sinfo: Mapping[str, Any]) -> Dict[str, NodeState]:
    """The nodes of either document, {"nodes": [...]}: Slurm 22.05 gives ``state`` as a word and ``state_flags`` as a list; 23.02 and
    later give ``state`` as a list of words, flags included. A node listed once per partition is merged."""
    nodes: Dict[str, NodeState] = {}
    for entry in sinfo.get("nodes") or []:
        if not isinstance(entry, Mapping):
            continue
        name = entry.get("name")
        if not isinstance(name, str) or not name:
            continue
        words = _state_words(entry.get("state")) | _state_words(entry.get("state_flags"))
        partitions = tuple(str(part) for part in entry.get("partitions") or [])
        earlier = nodes.get(name)
        if earlier is not None:
            partitions = tuple(sorted(set(earlier.partitions) | set(partitions)))
        nodes[name] = NodeState(name, bool(words & DRAIN_WORDS), str(entry.get("reason") or ""), partitions,
                                bool(words & OUT_OF_SERVICE_WORDS), bool(words & JOB_WORDS))
    return nodes


def node_state_from_dict(document: Mapping[str, Any]) -> NodeState:
    """A NodeState from its to_dict() (the module's answer, read back on the controller)."""
    return NodeState(str(document.get("name") or ""), bool(document.get("drained")), str(document.get("reason") or ""),
                     tuple(str(part) for part in document.get("partitions") or []), bool(document.get("down")),
                     bool(document.get("job_running")))


def _state_words(value: Any) -> Set[str]:
    if isinstance(value, str):
        return {word.upper() for word in value.replace("+", " ").split()}
    if isinstance(value, list):
        return {str(word).upper() for word in value}
    return set()
