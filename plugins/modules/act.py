#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: gpufleet.validation contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
---
module: act
short_description: Act on a run's verdicts in Slurm (drain, resume, behind a circuit breaker), and give each host's outcome
version_added: "0.1.0"
description:
  - Reads each host's outcome (C(<results_dir>/<run_id>/outcomes/<host>.json), written by
    M(gpufleet.validation.report)) and returns it under RV(hosts), for the user's own tasks.
  - With O(scheduler=slurm), reads Slurm's nodes (M(gpufleet.validation.slurm_nodes) on the host the task is delegated
    to), and plans per host, with why (docs/acting.md).
  - "It drains a node whose verdict is in O(drain_on), with the reason C(gpufleet <run id>: <root cause>)."
  - It resumes a node that passes and that this collection drained (its reason's prefix and the record of the run that
    drained it, C(<results_dir>/<that run>/slurm-actions.json)).
  - It leaves every other node, and never touches a node drained by anyone else.
  - The circuit breaker. Past O(max_drain_percent) of the run's hosts, or of a partition's nodes, it drains and
    resumes nothing, and fails naming the nodes it would have drained and why.
  - Each change is made only if the node is still as planned, and is reported done only if Slurm then shows it. What
    was done is recorded in C(<results_dir>/<run_id>/slurm-actions.json) and in each host's outcome.
  - Runs in its action plugin on the controller; only sinfo and scontrol run on the delegated host.
extends_documentation_fragment:
  - gpufleet.validation.controller_action
options:
  results_dir:
    description: Directory on the controller where the run's results are stored.
    type: path
    default: results
  run_id:
    description: The run whose verdicts to act on.
    type: str
    required: true
  hosts:
    description: The inventory names of the hosts to act on; empty, every host with an outcome in the run.
    type: list
    elements: str
    default: []
  scheduler:
    description: C(none) gives the outcomes only; C(slurm) acts in Slurm.
    type: str
    choices: [none, slurm]
    default: none
  node_names:
    description: The Slurm node name of each host (host name -> node name); a host not named (or named "") is its own.
    type: dict
    default: {}
  drain_on:
    description: The verdicts that drain a node.
    type: list
    elements: str
    choices: [fail, error, unreachable]
    default: [fail]
  max_drain_percent:
    description: The circuit breaker, the share of the run's hosts, and of each partition's nodes, that one run may drain.
    type: float
    default: 10.0
  min_drain_nodes:
    description: The nodes one run may drain however small the fleet or partition (the share rounded down, at least this).
    type: int
    default: 1
  intake_reason:
    description:
      - A drain reason that hands nodes to this collection for acceptance (give new nodes C(State=DRAIN Reason=...) in
        C(slurm.conf)). A node drained with exactly this reason is resumed when it passes; when it fails, its reason
        becomes the cause. Empty, no node is handed over.
    type: str
    default: ""
  slurm_conf:
    description: The C(slurm.conf) for sinfo and scontrol (C(SLURM_CONF)); default Slurm's own.
    type: path
  sinfo_path:
    description: The sinfo command on the delegated host.
    type: str
    default: sinfo
  scontrol_path:
    description: The scontrol command on the delegated host.
    type: str
    default: scontrol
attributes:
  check_mode:
    support: full
    description: Reads Slurm's nodes and returns the plan in RV(lines); changes and writes nothing.
  action:
    support: full
    description: The planning and the records happen in the action plugin on the controller.
"""

EXAMPLES = r"""
- name: Drain the nodes that failed, resume the ones this collection drained that pass
  gpufleet.validation.act:
    run_id: "{{ gpufleet_run_id }}"
    scheduler: slurm
    hosts: "{{ groups['gpu'] }}"
  delegate_to: slurm-controller
  become: true
"""

RETURN = r"""
hosts:
  description:
    - Per host, its outcome - schema_version, run_id, host, verdict, root_cause, reasons, gate, dossier, and action
      (scheduler, node, planned, done, why).
  returned: always
  type: dict
lines:
  description: The plan and what was done, one line per host and the circuit breaker's counts, for the terminal.
  returned: always
  type: list
  elements: str
record:
  description: The path of the run's record of acting in Slurm.
  returned: when Slurm was acted on
  type: str
"""

from ansible_collections.gpufleet.validation.plugins.module_utils.controller_only import refuse_on_host
from ansible_collections.gpufleet.validation.plugins.module_utils.act_spec import ACT_ARGUMENT_SPEC


def main():
    refuse_on_host("act", ACT_ARGUMENT_SPEC)


if __name__ == "__main__":
    main()
