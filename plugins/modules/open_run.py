#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: gpufleet.validation contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
---
module: open_run
short_description: Open a validation run's directory for this playbook run, or refuse it
version_added: "0.1.0"
description:
  - Makes C(<results_dir>/<run_id>/) for a fresh run and records this playbook run (its writer) in C(run.json).
  - A run id names one run. An id that already names a run is refused, so nothing is written, unless O(resume) is
    set (add a slice of hosts, probe what has no result yet); the reserved name C(latest) and a run directory that is a
    symbolic link are always refused.
  - A resume says which earlier playbook runs of the run are gone. Their finished results are kept; the probes then
    run only where a host has no result, or one that says the host was not reached.
  - The probes then write each host's directory only while this playbook run holds it (C(writer.json)); a host that
    another live playbook run holds is refused, naming that run. See C(docs/store.md).
  - Runs entirely in its action plugin on the controller; nothing runs on the managed hosts.
extends_documentation_fragment:
  - gpufleet.validation.controller_action
options:
  results_dir:
    description:
      - Directory on the controller where the runs are stored.
    type: path
    default: results
  run_id:
    description:
      - Identifier of the run (letters, digits, C(.), C(_), C(-); not C(latest)).
    type: str
    required: true
  resume:
    description:
      - Join a run that already exists instead of refusing it.
    type: bool
    default: false
  profile:
    description:
      - The profile this playbook run probes with, recorded in C(run.json).
    type: str
attributes:
  check_mode:
    support: full
    description: Checks the run id and the directory in check mode and writes nothing.
"""

EXAMPLES = r"""
- name: Open the run, or join it as one slice of several
  gpufleet.validation.open_run:
    results_dir: results
    run_id: "{{ gpufleet_run_id }}"
    resume: "{{ gpufleet_resume | default(false) }}"
"""

RETURN = r"""
results_dir:
  description: The directory of the runs, as given or defaulted (relative to the directory ansible-playbook runs from).
  returned: success
  type: str
run_dir:
  description: The run's directory.
  returned: success
  type: str
writer_id:
  description: This playbook run's id in C(run.json) and in each host's C(writer.json).
  returned: success
  type: str
writers:
  description: How many playbook runs have written into this run, this one included.
  returned: success
  type: int
gone_writers:
  description:
    - When resuming, one line for each earlier playbook run of this run that no longer runs (ended or killed), naming
      its pid and controller; the results it finished are kept and only what has no result is probed.
  returned: success
  type: list
  elements: str
"""

from ansible_collections.gpufleet.validation.plugins.module_utils.controller_only import refuse_on_host
from ansible_collections.gpufleet.validation.plugins.module_utils.open_run_spec import RUN_ARGUMENT_SPEC


def main():
    refuse_on_host("open_run", RUN_ARGUMENT_SPEC)


if __name__ == "__main__":
    main()
