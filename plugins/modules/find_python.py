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

import json
import os
import pwd
import shutil
import sys
import tempfile
import time

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.gpufleet.validation.plugins.module_utils.probe_process import read_tail, run_probe_process
from ansible_collections.gpufleet.validation.plugins.module_utils.python_discovery import (
    INSPECT_SOURCE,
    MAX_CANDIDATES,
    best_unconfirmed,
    candidate_paths,
    choose,
    inspected,
    not_runnable,
    reuse_proof,
)

INFO_LIMIT_BYTES = 64 * 1024


def inspect_candidate(candidate, timeout_s, workdir, index, mode):
    """Run one candidate (mode "scan" or "import", see INSPECT_SOURCE); (info, None) with what it reported, or
    (None, why it reported nothing)."""
    problem = not_runnable(candidate["path"])
    if problem is not None:
        return None, problem
    name = os.path.join(workdir, "candidate-%d-%s" % (index, mode))
    env = dict(os.environ, PYTHONDONTWRITEBYTECODE="1")
    outcome = run_probe_process([candidate["path"], "-B", "-c", INSPECT_SOURCE, name + ".json", mode], timeout_s,
                                name + ".stdout", name + ".stderr", cwd=workdir, env=env)
    if outcome.spawn_error is not None:
        return None, "could not be started: %s" % outcome.spawn_error
    if outcome.timed_out:
        return None, "did not finish %s torch and nvidia-ml-py within %d s" % (
            "importing" if mode == "import" else "looking for", timeout_s)
    try:
        with open(name + ".json", "rb") as handle:
            info = json.loads(handle.read(INFO_LIMIT_BYTES).decode("utf-8", "replace"))
    except (OSError, ValueError):
        info = None
    if not isinstance(info, dict):
        tail = read_tail(name + ".stderr", 300).strip().splitlines()
        return None, "is not a Python that runs the probes' check (exit %s%s)" % (
            outcome.returncode, ": " + tail[-1] if tail else "")
    return info, None


def _home():
    """The running user's home directory (what ~ means in a candidate), from HOME, else the password database."""
    if os.environ.get("HOME"):
        return os.environ["HOME"]
    try:
        return pwd.getpwuid(os.getuid()).pw_dir
    except KeyError:
        return None


def find(candidates, timeout_s, proven=None):
    """Every candidate scanned (torch found without importing it), then torch imported in the best one until one
    imports it: one import of torch per host, however many environments it has, and none where ``proven`` (an earlier
    run's confirmed choice) still holds."""
    started = time.monotonic()
    home = _home()
    paths = candidate_paths(candidates, sys.executable, os.environ, shutil.which("python3"), home)
    entries = []
    workdir = tempfile.mkdtemp(prefix="gpufleet-find-python-")
    try:
        for index, candidate in enumerate(paths):
            if index >= MAX_CANDIDATES:
                entries.append(inspected(candidate, None, "not tried: only the first %d candidates are run"
                                         % MAX_CANDIDATES))
                continue
            info, problem = inspect_candidate(candidate, timeout_s, workdir, index, "scan")
            entries.append(inspected(candidate, info, problem))
        reuse_proof(entries, proven)
        for unused_attempt in range(len(entries)):
            index = best_unconfirmed(entries)
            if index is None:
                break
            candidate = {"path": entries[index]["path"], "source": entries[index]["source"]}
            info, problem = inspect_candidate(candidate, timeout_s, workdir, index, "import")
            entries[index] = inspected(candidate, info, problem)
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
    return dict(choose(entries, sys.executable), duration_s=round(time.monotonic() - started, 3))


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
