# -*- coding: utf-8 -*-
# Copyright: gpufleet.validation contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The probes of a validation profile, in the order they run, from the probes' declarations."""
from __future__ import annotations

DOCUMENTATION = r"""
name: profile_probes
author: gpufleet.validation contributors (@gpufleet)
short_description: The probes of a validation profile, in the order they run
version_added: 0.1.0
description:
  - Returns the probes a profile runs. Each probe declares the profiles it belongs to
    (C(plugins/plugin_utils/probes/<probe>.py)), so the profiles are built from those declarations, never from a list.
  - A profile of the user's own (O(profiles), the C(gpufleet_profiles) variable) lists its probes; they run in the
    order the probes declare (a bandwidth probe before the sustained load), whatever the order written.
options:
  _terms:
    description: The profile's name (one).
    required: true
  profiles:
    description: "Profiles of the user's own, C({name: [probe, ...]}); a declared profile's name cannot be reused."
    type: dict
    default: {}
  beside_a_job:
    description:
      - Only the probes that cannot disturb a job running on the node (each probe declares it, C(disturbs_job)), for a
        node that Slurm shows allocated or mixed (docs/acting.md).
    type: bool
    default: false
"""

EXAMPLES = r"""
- name: Show what the acceptance profile runs
  ansible.builtin.debug:
    msg: "{{ lookup('gpufleet.validation.profile_probes', 'acceptance', wantlist=True) }}"

- name: Show what it runs on a node where a job runs
  ansible.builtin.debug:
    msg: "{{ lookup('gpufleet.validation.profile_probes', 'acceptance', beside_a_job=true, wantlist=True) }}"
"""

RETURN = r"""
_raw:
  description: The probe names, in the order they run.
  type: list
  elements: str
"""

from ansible.errors import AnsibleLookupError
from ansible.plugins.lookup import LookupBase

from ansible_collections.gpufleet.validation.plugins.plugin_utils.probe_kit.registry import beside_a_job, profile_probes


class LookupModule(LookupBase):

    def run(self, terms, variables=None, **kwargs):
        self.set_options(var_options=variables, direct=kwargs)
        if len(terms) != 1:
            raise AnsibleLookupError("profile_probes takes one profile name, not %d" % len(terms))
        try:
            probes = profile_probes(terms[0], self.get_option("profiles"))
        except ValueError as exc:
            raise AnsibleLookupError(str(exc)) from exc
        if self.get_option("beside_a_job"):
            kept, unused_skipped = beside_a_job(probes)
            return [name for name, unused_params in kept]
        return probes
