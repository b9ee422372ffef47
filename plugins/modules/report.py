#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: gpufleet.validation contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
---
module: report
short_description: Render the dossier of every host and the fleet index of a validation run
version_added: "0.1.0"
description:
  - Reads the results that M(gpufleet.validation.probe) stored under C(<results_dir>/<run_id>/) and renders, on the
    controller, a dossier per host (self-contained HTML and Markdown) and the fleet index (HTML and Markdown).
  - Every value is shown with its unit and every field that could not be read with its reason. Every host of
    O(expected_hosts) appears, also those that left no result.
  - Files are written atomically; C(<results_dir>/latest) is pointed at the run.
  - Runs entirely in its action plugin on the controller; nothing runs on the managed hosts.
author:
  - gpufleet.validation contributors (@gpufleet)
options:
  results_dir:
    description:
      - Directory on the controller where the probe results are stored.
    type: path
    default: results
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
attributes:
  check_mode:
    support: full
    description: Renders nothing in check mode.
  diff_mode:
    support: none
    description: Produces no diff.
  action:
    support: full
    description: All the work happens in the action plugin of the same name.
  async:
    support: none
    description: Not supported.
"""

EXAMPLES = r"""
- name: Render the reports of a run
  gpufleet.validation.report:
    results_dir: "{{ playbook_dir }}/results"
    run_id: "{{ gpufleet_run_id }}"
    expected_hosts: "{{ groups['all'] }}"
"""

RETURN = r"""
index_html:
  description: Path of the fleet index page.
  returned: success
  type: str
  sample: /srv/validation/results/20261130T020000Z-000042/index.html
hosts:
  description: Per host, its state and the paths of its dossier.
  returned: success
  type: dict
unreachable_hosts:
  description: Hosts that left no result or could not be reached; the report role fails the play when there are any.
  returned: success
  type: list
  elements: str
summary_lines:
  description: One line per host (state and reason) followed by where the reports are; for the person at the terminal.
  returned: success
  type: list
  elements: str
"""

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.gpufleet.validation.plugins.module_utils.report_spec import REPORT_ARGUMENT_SPEC


def main():
    module = AnsibleModule(argument_spec=REPORT_ARGUMENT_SPEC, supports_check_mode=True)
    module.fail_json(msg="gpufleet.validation.report runs in its action plugin on the controller; "
                         "it cannot run as a module on a host")


if __name__ == "__main__":
    main()
