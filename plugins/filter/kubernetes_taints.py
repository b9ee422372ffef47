# -*- coding: utf-8 -*-
# Copyright: gpufleet.validation contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""A Kubernetes node's taints after a validation run, merged with the node's own (plugin_utils/act/kubernetes_taints.py)."""
from __future__ import annotations

DOCUMENTATION = r"""
name: kubernetes_taints
author: gpufleet.validation contributors (@gpufleet)
short_description: A Kubernetes node's taints after a validation run, merged with the node's own
version_added: 0.1.0
description:
  - Given a node as C(kubernetes.core.k8s_info) returns it and the host's outcome (C(gpufleet_outcome)), returns what
    to do with the node, its whole new taint list and the JSON merge patch that sets it.
  - Only the taint C(gpufleet.validation/failed) is added, replaced or removed; every other taint is kept as it is and
    where it is. C(spec.taints) has no patch strategy, so a patch replaces the whole list; this one carries the node's
    own list, merged, and its C(metadata.resourceVersion), so that the API server refuses it (409 Conflict) where the
    node changed since it was read.
  - The taint's value is the run id where that is a valid label value (at most 63 characters, alphanumeric at both
    ends), otherwise a shortened form with a hash of it; the annotation C(gpufleet.validation/run-id) holds the full id
    and C(gpufleet.validation/run-started) when the run started.
  - A host whose root causes are all a busy GPU is left alone, and so is a taint put by a run that started after this
    one (or at a time not recorded).
positional: outcome
options:
  _input:
    description: The node, one of the C(resources) of C(kubernetes.core.k8s_info); null where Kubernetes has none.
    type: dict
    required: true
  outcome:
    description: The host's outcome, the C(gpufleet_outcome) variable (docs/acting.md).
    type: dict
    required: true
  taint_on:
    description: The verdicts that taint the node.
    type: list
    elements: str
    default: [fail, error]
  untaint_on:
    description: The verdicts that remove this collection's taint; any other verdict leaves the node as it is.
    type: list
    elements: str
    default: [pass, warn]
"""

EXAMPLES = r"""
- name: Read the node
  kubernetes.core.k8s_info:
    kind: Node
    name: "{{ inventory_hostname }}"
  register: node_read
  delegate_to: localhost

- name: Merge this collection's taint into the node's taints
  ansible.builtin.set_fact:
    taint_plan: "{{ node_read.resources | first | default(None) | gpufleet.validation.kubernetes_taints(gpufleet_outcome) }}"

- name: Patch the node, only where its taints change
  kubernetes.core.k8s:
    state: patched
    merge_type: merge
    definition: "{{ taint_plan.patch }}"
  delegate_to: localhost
  when: taint_plan.patch is not none
"""

RETURN = r"""
_value:
  description: What to do with the node.
  type: dict
  contains:
    action:
      description: taint, untaint or leave.
      type: str
    why:
      description: The verdict and run that decided it, or why the node is left.
      type: str
    changed:
      description: Whether the node must be patched.
      type: bool
    taints:
      description: The node's whole taint list after the change (its own list where nothing changes).
      type: list
      elements: dict
    patch:
      description:
        - The JSON merge patch for C(kubernetes.core.k8s) with C(state=patched) and C(merge_type=merge) (apiVersion,
          kind, metadata.name, metadata.resourceVersion, metadata.annotations, spec.taints); null where nothing changes.
      type: dict
"""

from ansible.errors import AnsibleFilterError

from ansible_collections.gpufleet.validation.plugins.plugin_utils.act.kubernetes_taints import TAINT_ON, UNTAINT_ON, node_taints


def kubernetes_taints(node, outcome, taint_on=TAINT_ON, untaint_on=UNTAINT_ON):
    try:
        return node_taints(node, outcome, taint_on, untaint_on)
    except ValueError as exc:
        raise AnsibleFilterError("kubernetes_taints: %s" % exc) from exc


class FilterModule:

    def filters(self):
        return {"kubernetes_taints": kubernetes_taints}
