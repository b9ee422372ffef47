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
    type: list
    elements: str
    default: []
  timeout:
    description:
      - Seconds one candidate may take to import torch and nvidia-ml-py before it is killed.
    type: int
    default: 60
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
    candidates:
      description: Every candidate with its version, torch, torch_cuda, nvml and the problem it had, if any.
      type: list
      elements: dict
"""

import json
import os
import shutil
import sys
import tempfile

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.gpufleet.validation.plugins.module_utils.probe_process import read_tail, run_probe_process
from ansible_collections.gpufleet.validation.plugins.module_utils.python_discovery import (
    INSPECT_SOURCE,
    BEST_CAPABILITY,
    MAX_CANDIDATES,
    candidate_paths,
    capability,
    choose,
    inspected,
    not_runnable,
)

INFO_LIMIT_BYTES = 64 * 1024


def inspect_candidate(candidate, timeout_s, workdir, index):
    """Run one candidate; (info, None) with what it reported, or (None, why it reported nothing)."""
    problem = not_runnable(candidate["path"])
    if problem is not None:
        return None, problem
    out_path = os.path.join(workdir, "candidate-%d.json" % index)
    stderr_path = os.path.join(workdir, "candidate-%d.stderr" % index)
    env = dict(os.environ, PYTHONDONTWRITEBYTECODE="1")
    outcome = run_probe_process([candidate["path"], "-B", "-c", INSPECT_SOURCE, out_path], timeout_s,
                                os.path.join(workdir, "candidate-%d.stdout" % index), stderr_path, cwd=workdir,
                                env=env)
    if outcome.spawn_error is not None:
        return None, "could not be started: %s" % outcome.spawn_error
    if outcome.timed_out:
        return None, "did not finish importing torch and nvidia-ml-py within %d s" % timeout_s
    try:
        with open(out_path, "rb") as handle:
            info = json.loads(handle.read(INFO_LIMIT_BYTES).decode("utf-8", "replace"))
    except (OSError, ValueError):
        info = None
    if not isinstance(info, dict):
        tail = read_tail(stderr_path, 300).strip().splitlines()
        return None, "is not a Python that runs the probes' check (exit %s%s)" % (
            outcome.returncode, ": " + tail[-1] if tail else "")
    return info, None


def find(candidates, timeout_s):
    home = os.path.expanduser("~")
    paths = candidate_paths(candidates, sys.executable, os.environ, shutil.which("python3"), home)
    entries = []
    workdir = tempfile.mkdtemp(prefix="gpufleet-find-python-")
    try:
        for index, candidate in enumerate(paths):
            if index >= MAX_CANDIDATES:
                entries.append(inspected(candidate, None, "not tried: only the first %d candidates are run"
                                         % MAX_CANDIDATES))
                continue
            if any(capability(entry) == BEST_CAPABILITY for entry in entries):
                entries.append(inspected(candidate, None, "not tried: an earlier candidate has all the probes use"))
                continue
            info, problem = inspect_candidate(candidate, timeout_s, workdir, index)
            entries.append(inspected(candidate, info, problem))
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
    return choose(entries, sys.executable)


def main():
    module = AnsibleModule(argument_spec=dict(candidates=dict(type="list", elements="str", default=[]),
                                              timeout=dict(type="int", default=60)),
                           supports_check_mode=True)
    if module.params["timeout"] < 1:
        module.fail_json(msg="timeout must be at least 1 second, not %d" % module.params["timeout"])
    module.exit_json(changed=False, choice=find(module.params["candidates"], module.params["timeout"]))


if __name__ == "__main__":
    main()
