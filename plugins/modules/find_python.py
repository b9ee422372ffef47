#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: gpufleet.validation contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
---
module: find_python
short_description: Find the host's Python that has torch with CUDA and nvidia-ml-py
version_added: "0.1.0"
description:
  - Runs every candidate interpreter on the host once, with the environment a probe gets, and asks it what it can
    import (torch, torch's CUDA build, nvidia-ml-py); returns the best one and why, with what every candidate said.
  - Candidates, in order, each path once, from the user's O(candidates) (globs allowed), the interpreter Ansible uses
    for this module, C(python3) on C(PATH), C($VIRTUAL_ENV) and C($CONDA_PREFIX), and the usual virtualenv and conda
    locations (C(~/.venv), C(~/miniforge3), C(/opt/conda), C(/opt/*/bin), ...); at most 24 are run.
  - Every candidate is scanned first, finding torch without importing it (its C(torch/version.py) read as literals)
    and importing nvidia-ml-py; then torch is imported in the best candidate, and in the next best while that fails,
    so a host pays for one import of torch however many environments it has.
  - The best has torch built for CUDA, then nvidia-ml-py, then torch at all; among equals the earliest wins. When no
    candidate has torch or nvidia-ml-py the interpreter Ansible uses is returned with C(found=false) and a reason that
    lists what was tried.
  - The gpufleet.validation.probe action runs this module once per host and playbook run when C(gpufleet_python) is
    not set, and records the choice in the host's C(inputs.json) and dossier.
  - Every candidate runs as an argument list (never through a shell) in its own process group, killed after
    O(timeout) seconds; nothing is written on the host outside a temporary directory that is removed.
author:
  - gpufleet.validation contributors (@gpufleet)
options:
  candidates:
    description:
      - Interpreters to try first, paths or globs (C(~) is the connecting user's home). A path named here that does
        not exist is reported as such.
      - The home is never a pattern (a home named C(home [x]) globs nothing beside it), and a path that exists as
        written is taken as written, brackets and all.
    type: list
    elements: str
    default: []
  timeout:
    description:
      - Seconds one run of a candidate (its scan, or its import of torch) may take before it is killed.
    type: int
    default: 60
  proven:
    description:
      - The choice an earlier run confirmed by importing torch (path, executable, torch, torch_cuda, nvml, fingerprint,
        run_id), as the gpufleet.validation.probe action reads it from the host's previous results. When the candidate
        that would be chosen matches it and its fingerprint (the interpreter, torch's C(version.py) and the directory
        torch is installed in, by inode, size and modification time) is unchanged, torch is not imported again.
    type: dict
notes:
  - Check mode runs the candidates too (they only import); nothing changes on the host.
attributes:
  check_mode:
    support: full
    description: Only reads; the same in check mode.
  diff_mode:
    support: none
    description: Produces no diff.
"""

EXAMPLES = r"""
- name: Find the Python that has torch
  gpufleet.validation.find_python:
    candidates:
      - /srv/ml/*/bin/python3
  register: found

- name: Run a probe with it
  gpufleet.validation.probe:
    name: health
    python: "{{ found.choice.python }}"
    run_id: manual-1
"""

RETURN = r"""
choice:
  description: The interpreter chosen, why, and every candidate tried.
  returned: always
  type: dict
  contains:
    python:
      description: Path of the chosen interpreter.
      type: str
      sample: /opt/torch/.venv/bin/python3
    source:
      description: Where it was found (C(python3 on PATH), C(gpufleet_python_candidates), ...).
      type: str
    found:
      description: Whether a candidate has torch or nvidia-ml-py; false means the interpreter Ansible uses was returned.
      type: bool
    why:
      description: The reason in words, naming what the chosen one offers, or what was tried when none fits.
      type: str
    duration_s:
      description: Seconds the search took on the host.
      type: float
    candidates:
      description: Every candidate with its version, torch, torch_cuda, nvml and the problem it had, if any.
      type: list
      elements: dict
"""

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.gpufleet.validation.plugins.module_utils.python_search import find


def main():
    module = AnsibleModule(argument_spec=dict(candidates=dict(type="list", elements="str", default=[]),
                                              timeout=dict(type="int", default=60),
                                              proven=dict(type="dict")),
                           supports_check_mode=True)
    if module.params["timeout"] < 1:
        module.fail_json(msg="timeout must be at least 1 second, not %d" % module.params["timeout"])
    module.exit_json(changed=False, choice=find(module.params["candidates"], module.params["timeout"],
                                                module.params["proven"]))


if __name__ == "__main__":
    main()
