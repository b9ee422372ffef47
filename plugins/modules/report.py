#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: gpufleet.validation contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
---
module: report
short_description: Judge a validation run and render every host's dossier, the fleet index and the exports
version_added: "0.1.0"
description:
  - Reads the results that M(gpufleet.validation.probe) stored under C(<results_dir>/<run_id>/), judges them and renders,
    on the controller, a dossier per host (self-contained HTML and Markdown), the fleet index (HTML and Markdown),
    C(fleet.json), C(junit.xml) (one test case per check per host) and C(gpufleet.prom) (node_exporter textfile format).
  - The judge holds every result against the rules (the collection's, listed in C(docs/rules.yaml), with each host's overrides), the baseline of
    the GPU's SKU (C(baselines/)), the fleet median of hosts of the same SKU, and the same host's previous run.
  - Every host of O(expected_hosts) appears, also those that left no result; such a host is never a pass.
  - Files are written atomically; C(<results_dir>/latest) is pointed at the run.
  - Runs entirely in its action plugin on the controller; nothing runs on the managed hosts.
options:
  run_id:
    description:
      - Identifier of the run to report on.
    type: str
    required: true
  expected_hosts:
    description:
      - Inventory names of every host that the run was meant to validate.
    type: list
    elements: str
    default: []
  host_groups:
    description:
      - Inventory groups of each host (its rack, for example), as a mapping of host name to a list of group names.
    type: dict
    default: {}
  rule_overrides:
    description:
      - "Per host, overrides of the default rules: a mapping of host name to C(rule id -> severity, params, enabled)."
      - The playbook fills it from each host's C(gpufleet_rule_overrides) variable, so groups and hosts can differ.
    type: dict
    default: {}
  baselines_dir:
    description:
      - Directory of baseline files (one YAML per GPU SKU). Defaults to the collection's C(baselines/).
    type: path
  rules_file:
    description:
      - The rules file. Defaults to the collection's rules (each probe's C(rules.yaml), listed in C(docs/rules.yaml)).
    type: path
  gated:
    description:
      - Whether the run enforces its gate (the report role sets it from C(gpufleet_gate), true unless set false, in every
        profile). The gate refuses a host that fails, errs, was not reached or is C(not_validated) (a headline its
        profile promises was not proven on it), and a host where no GPU was measured.
      - C(fleet.json) says whether the gate was enforced (C(gate.enforced)); C(junit.xml) follows it. A C(warn) host the
        gate refuses (no GPU was measured on it) is then a C(host.verdict) failure; otherwise that test case passes with
        the reason in its system-out. A C(fail), C(error), C(unreachable) or C(not_validated) host fails C(junit.xml)
        either way.
    type: bool
    default: true
  profile:
    description:
      - The profile whose promised headlines every host is judged by (C(docs/judge.md), "What a pass proves").
      - Unset, each host is judged by the profile its own run recorded (the probes it ran for it, C(inputs.json)).
    type: str
  profiles:
    description:
      - "Profiles of the user's own, C({name: [probe, ...]}) (the C(gpufleet_profiles) variable), for O(profile)."
    type: dict
    default: {}
attributes:
  check_mode:
    support: full
    description: Renders nothing in check mode.
extends_documentation_fragment:
  - gpufleet.validation.controller_action
  - gpufleet.validation.controller_action.results_dir
"""

EXAMPLES = r"""
- name: Judge and render the reports of a run
  gpufleet.validation.report:
    results_dir: results
    run_id: "{{ gpufleet_run_id }}"
    expected_hosts: "{{ groups['all'] }}"
    rule_overrides:
      gpu-a01-n01:
        health.pcie_link_gen:
          severity: warn
"""

RETURN = r"""
index_html:
  description: Path of the fleet index page.
  returned: success
  type: str
  sample: /srv/validation/results/20261130T020000Z-000042/index.html
files:
  description: Paths of the fleet-level outputs (C(index.html), C(index.md), C(fleet.json), C(junit.xml), C(gpufleet.prom)).
  returned: success
  type: dict
hosts:
  description:
    - Per host, its verdict (pass, warn, not_validated, fail, error, unreachable), its reasons, its SKU and the paths of
      its dossier.
    - C(line) is the host's one line of RV(summary_lines); C(gate) is true when the gate refuses the host.
  returned: success
  type: dict
gate_lines:
  description: One line per host that the gate refuses (fail, error, unreachable, not_validated, or no GPU measured), with its reasons.
  returned: success
  type: list
  elements: str
gate_hosts:
  description: The hosts that the gate refuses, worst first.
  returned: success
  type: list
  elements: str
unreachable_hosts:
  description: Hosts that left no result or could not be reached.
  returned: success
  type: list
  elements: str
previous_run_id:
  description: The earlier run most hosts were compared with for drift, if any.
  returned: success
  type: str
weakened_rules:
  description:
    - The shipped rules (listed in C(docs/rules.yaml)) that the rules file or the hosts' C(gpufleet_rule_overrides) disabled or
      downgraded from fail to warn, one entry per change, as in C(fleet.json); empty when none.
    - Each has C(rule), C(probe), C(change) (disabled or downgraded), C(how), C(by) (the rules file or the override),
      C(hosts) and C(groups) (the groups all of whose hosts it covers).
  returned: success
  type: list
  elements: dict
summary_lines:
  description:
    - One line per host, worst first (its verdict and first reasons), then one per weakened rule (at most 20), followed
      by where the reports are; for the person at the terminal. A verdict is said here only, not again as a warning.
    - A line holds no control character; a reason's line breaks are written C( / ) (docs/security.md).
  returned: success
  type: list
  elements: str
"""

from ansible_collections.gpufleet.validation.plugins.module_utils.controller_only import refuse_on_host
from ansible_collections.gpufleet.validation.plugins.module_utils.report_spec import REPORT_ARGUMENT_SPEC


def main():
    refuse_on_host("report", REPORT_ARGUMENT_SPEC)


if __name__ == "__main__":
    main()
