#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: gpufleet.validation contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
---
module: check_inputs
short_description: Check a validation run's inputs on the controller before anything runs
version_added: "0.1.0"
description:
  - Reads the variables of every host of O(hosts) and of the controller and fails, naming the host, the variable and
    what is wrong, when one is of the wrong type or out of range, so that a bad inventory stops the run before any
    probe starts and before anything is written.
  - Checks C(gpufleet_profile) (one of the probe role's profiles), C(gpufleet_python) (a string),
    C(gpufleet_python_candidates) (a list of paths or globs),
    C(gpufleet_results_dir) (a non-empty string), C(probe_timeouts) (probe name to whole seconds, 1 to 86400),
    C(probe_params) (probe name to a mapping; the probe itself refuses a parameter it does not know),
    C(gpufleet_rule_overrides) (against C(schemas/rule_overrides.schema.json) and the rules, that is the rule ids,
    their params and the params' kinds), C(gpufleet_run_id), and that every profile names probes the collection has.
  - Loads the rules file (C(gpufleet_rules_file), or the report role's C(report_rules_file) when set; default
    the collection's, listed in C(docs/rules.yaml)) and fails when it is not valid YAML or
    breaks C(schemas/rules.schema.json), or when a rule's C(params.path) names a field its probe's schema rules out,
    naming the file and the problem; a rules file whose C(rules) list is empty is refused. Fails when the rules file
    or a host's C(gpufleet_rule_overrides) leaves a probe of the host's profile (custom C(gpufleet_profiles) included)
    that the collection's rules judge with no enabled rule, naming the host, the probe and the variable; a probe that
    judges nothing by its declaration is exempt. A broken file in the baselines folder
    (C(gpufleet_baselines_dir), default C(baselines/)) is a warning; the judge reports it and compares that SKU's hosts
    with their peers only.
  - Fails when O(hosts) is empty, that is when C(gpufleet_hosts) (default C(all)) matches no host of the inventory,
    as when the playbook runs without C(-i) and no inventory is configured; the problem names the pattern and the
    inventory sources and says to give an inventory with C(-i).
  - Runs entirely in its action plugin on the controller; nothing runs on the managed hosts and nothing is written.
extends_documentation_fragment:
  - gpufleet.validation.controller_action
options:
  hosts:
    description:
      - Inventory names of the hosts the run will validate; each one's variables are checked. An empty list is a
        problem (no hosts matched).
    type: list
    elements: str
    required: true
attributes:
  check_mode:
    support: full
    description: Checks the same way in check mode; it never changes anything.
"""

EXAMPLES = r"""
- name: Check every host's variables before anything runs
  gpufleet.validation.check_inputs:
    hosts: "{{ query('ansible.builtin.inventory_hostnames', 'all') }}"
"""

RETURN = r"""
problems:
  description: One sentence per problem, each naming the host (or the controller) and the variable.
  returned: always
  type: list
  elements: str
profiles:
  description: The profiles a host may name in C(gpufleet_profile).
  returned: success
  type: list
  elements: str
probes:
  description: The probes a key of C(probe_timeouts) or C(probe_params) may name.
  returned: success
  type: list
  elements: str
"""

from ansible_collections.gpufleet.validation.plugins.module_utils.controller_only import refuse_on_host
from ansible_collections.gpufleet.validation.plugins.module_utils.check_inputs_spec import INPUTS_ARGUMENT_SPEC


def main():
    refuse_on_host("check_inputs", INPUTS_ARGUMENT_SPEC)


if __name__ == "__main__":
    main()
