#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: gpufleet.validation contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
---
module: slurm_nodes
short_description: Read Slurm's nodes, and drain or resume named ones, each only if it is still as the plan saw it
version_added: "0.1.0"
description:
  - Runs on a host where C(sinfo) and C(scontrol) reach the Slurm controller (the controller itself, or a login node).
  - Reads every node with C(scontrol show nodes --json) (Slurm 23.02 and later), else C(sinfo --json) (21.08 to
    22.05). With O(changes), drains or resumes each named node
    with C(scontrol update), but only if the node is still as the plan saw it when read here just before (a drain only
    a node that is not drained, or one drained with O(changes[].expect_reason); a resume only a node drained with
    O(changes[].expect_reason)); then reads the nodes again and reports each change done only if Slurm shows it.
  - A drain is refused for a node that is drained, down or given a reason by anyone since the plan read it. The nodes
    are read once, just before the changes, and once after them.
  - Called by the action plugin of M(gpufleet.validation.act), which decides the changes (docs/acting.md); every
    command is an argument vector, never a shell line.
author:
  - gpufleet.validation contributors (@gpufleet)
options:
  changes:
    description: The drains and resumes to make, in order. Empty reads only.
    type: list
    elements: dict
    default: []
    suboptions:
      node:
        description: The Slurm node's name; one node (no list, no range).
        type: str
        required: true
      action:
        description: What to do.
        type: str
        choices: [drain, resume]
        required: true
      reason:
        description: The drain reason (one line). Required for O(changes[].action=drain).
        type: str
      expect_reason:
        description:
          - The reason the node must be drained with now. Required for a resume; for a drain, the node must then be
            drained with it (its reason is replaced), and without it the node must not be drained.
        type: str
  slurm_conf:
    description: The C(slurm.conf) to use (C(SLURM_CONF) for sinfo and scontrol); default Slurm's own.
    type: path
  sinfo_path:
    description: The sinfo command; a bare name is looked up on the PATH.
    type: str
    default: sinfo
  scontrol_path:
    description: The scontrol command; a bare name is looked up on the PATH.
    type: str
    default: scontrol
attributes:
  check_mode:
    support: full
    description: Reads the nodes and changes nothing.
  diff_mode:
    support: none
    description: Produces no diff.
"""

EXAMPLES = r"""
- name: Read every node's state
  gpufleet.validation.slurm_nodes:
  register: slurm

- name: Drain a node that is in service
  gpufleet.validation.slurm_nodes:
    changes:
      - node: gpu-017
        action: drain
        reason: "gpufleet 20261204T020000Z-000042: health.ecc_volatile_uncorrected: 3 uncorrectable errors on GPU 5"
"""

RETURN = r"""
nodes:
  description: Every node as read before any change (name, drained, reason, partitions, down, and job_running, true when allocated or mixed).
  returned: always
  type: list
  elements: dict
applied:
  description:
    - Per change, C(node), C(action), C(reason), C(done) (Slurm shows the change after it), C(why) (why not done, or
      what Slurm shows), C(rc) and C(stderr) of scontrol (null where it was not run).
  returned: always
  type: list
  elements: dict
"""

import json
import os

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.gpufleet.validation.plugins.module_utils.slurm_node_states import is_node_name, node_states

OUTPUT_LIMIT_CHARS = 2000


def command(module, name):
    """The command's path: a bare name looked up on the PATH, where its absence is said as what to do about it."""
    if os.sep in name:
        return name
    path = module.get_bin_path(name)
    if path is None:
        module.fail_json(msg="Slurm's %s is not installed on this host (nor on its PATH): run acting where Slurm's client "
                         "commands reach the controller (gpufleet_slurm_host, e.g. the Slurm controller or a login node)"
                         % name, nodes=[], applied=[])
    return path


def read_nodes(module, scontrol, sinfo, environment):
    """(every node, None), or (None, why not): ``scontrol show nodes --json`` (Slurm 23.02 and later), else
    ``sinfo --json`` (21.08 to 22.05; later versions summarise per partition there instead of listing nodes). Slurm
    answers a controller it cannot reach with rc 0, no node and its ``errors``: that is a failure, never an empty
    cluster."""
    rc, out, unused_err = module.run_command([scontrol, "show", "nodes", "--json"], environ_update=environment)
    document = _json_object(out) if rc == 0 else None
    if document is None or not isinstance(document.get("nodes"), list):
        rc, out, err = module.run_command([sinfo, "--json"], environ_update=environment)
        if rc != 0:
            return None, ("neither scontrol show nodes --json nor sinfo --json could read the nodes (rc %d): %s"
                          % (rc, (err or out).strip()[:OUTPUT_LIMIT_CHARS]))
        document = _json_object(out)
        if document is None or not isinstance(document.get("nodes"), list):
            return None, "sinfo --json printed no list of nodes (Slurm 21.08 or later has it); it printed %r" % out[:200]
    errors = document.get("errors")
    if errors:
        return None, ("Slurm answered with errors, so its nodes are unknown (is slurmctld up and reachable?): %s"
                      % json.dumps(errors)[:OUTPUT_LIMIT_CHARS])
    return node_states(document), None


def _json_object(text):
    try:
        document = json.loads(text)
    except ValueError:
        return None
    return document if isinstance(document, dict) else None


def refusal(change, state):
    """Why the change must not be made to the node as it is now, or None."""
    node, expected = change["node"], change.get("expect_reason")
    if not is_node_name(node):
        return "%r is not one node's name" % node
    if state is None:
        return "Slurm has no node %r" % node
    if change["action"] == "drain" and not change.get("reason"):
        return "a drain needs a reason"
    if change["action"] == "drain" and expected is None:
        if state.drained or state.down or state.reason:
            return "taken out of service or given a reason since it was read (%s): left alone" % (state.reason or "no reason")
        return None
    if not state.drained:
        return "not drained any more: left alone"
    if state.reason != expected:
        return "drained now with another reason (%s): left alone" % (state.reason or "no reason")
    return None


def scontrol_argv(scontrol, change):
    if change["action"] == "drain":
        return [scontrol, "update", "NodeName=%s" % change["node"], "State=DRAIN", "Reason=%s" % change["reason"]]
    return [scontrol, "update", "NodeName=%s" % change["node"], "State=RESUME"]


def confirmed(change, state):
    """(done, what Slurm shows) after the change."""
    if state is None:
        return False, "Slurm no longer lists the node"
    if change["action"] == "drain":
        done = state.drained and state.reason == change["reason"]
        return done, "drained: %s" % state.reason if state.drained else "not drained"
    return not state.drained, "drained: %s" % state.reason if state.drained else "not drained"


def main():
    module = AnsibleModule(
        argument_spec=dict(
            changes=dict(type="list", elements="dict", default=[], options=dict(
                node=dict(type="str", required=True),
                action=dict(type="str", required=True, choices=["drain", "resume"]),
                reason=dict(type="str"),
                expect_reason=dict(type="str"),
            )),
            slurm_conf=dict(type="path"),
            sinfo_path=dict(type="str", default="sinfo"),
            scontrol_path=dict(type="str", default="scontrol"),
        ),
        supports_check_mode=True,
    )
    environment = {"SLURM_CONF": module.params["slurm_conf"]} if module.params["slurm_conf"] else {}
    scontrol, sinfo = command(module, module.params["scontrol_path"]), command(module, module.params["sinfo_path"])
    before, unread = read_nodes(module, scontrol, sinfo, environment)
    if before is None:
        module.fail_json(msg=unread, nodes=[], applied=[])
    changes = module.params["changes"]
    nodes = [state.to_dict() for state in before.values()]
    if module.check_mode or not changes:
        module.exit_json(changed=False, nodes=nodes, applied=[
            dict(change, done=False, why="check mode: not made", rc=None, stderr=None) for change in changes])
    applied = []
    for change in changes:
        why = refusal(change, before.get(change["node"]))
        if why is not None:
            applied.append(dict(change, done=False, why=why, rc=None, stderr=None))
            continue
        rc, out, err = module.run_command(scontrol_argv(scontrol, change), environ_update=environment)
        applied.append(dict(change, done=False, why="" if rc == 0 else "scontrol failed", rc=rc,
                            stderr=(err or out).strip()[:OUTPUT_LIMIT_CHARS]))
    after, unread = read_nodes(module, scontrol, sinfo, environment)
    for entry in applied:
        if entry["rc"] == 0 and after is None:
            entry["why"] = "scontrol said yes, but the nodes could not be read back: %s" % unread
        elif entry["rc"] == 0:
            entry["done"], shows = confirmed(entry, after.get(entry["node"]))
            entry["why"] = "Slurm shows it %s" % shows if entry["done"] else "scontrol said yes, but Slurm shows it %s" % shows
    if after is None:
        module.fail_json(msg="the changes were asked of scontrol, but the nodes could not be read back: %s" % unread,
                         changed=any(entry["rc"] == 0 for entry in applied), nodes=nodes, applied=applied)
    module.exit_json(changed=any(entry["done"] for entry in applied), nodes=nodes, applied=applied)


if __name__ == "__main__":
    main()
