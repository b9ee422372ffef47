# -*- coding: utf-8 -*-
# Copyright: gpufleet.validation contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Python discovery as it runs on the host: every candidate scanned, torch imported in the best until one imports it.
gpufleet.validation.find_python runs it alone; gpufleet.validation.probe runs it before starting the first probe of a
host, in the same module run. What is chosen and why is decided by python_discovery.py (pure logic)."""
from __future__ import annotations

import json
import os
import pwd
import shutil
import sys
import tempfile
import time

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
    """Run one candidate (mode "scan" or "import", see INSPECT_SOURCE); (info, None, False) with what it reported, or
    (None, why it reported nothing, whether it ran past timeout_s)."""
    problem = not_runnable(candidate["path"])
    if problem is not None:
        return None, problem, False
    name = os.path.join(workdir, "candidate-%d-%s" % (index, mode))
    env = dict(os.environ, PYTHONDONTWRITEBYTECODE="1")
    outcome = run_probe_process([candidate["path"], "-B", "-c", INSPECT_SOURCE, name + ".json", mode], timeout_s,
                                name + ".stdout", name + ".stderr", cwd=workdir, env=env)
    if outcome.spawn_error is not None:
        return None, "could not be started: %s" % outcome.spawn_error, False
    if outcome.timed_out:
        return None, "did not finish %s torch and nvidia-ml-py within %d s" % (
            "importing" if mode == "import" else "looking for", timeout_s), True
    try:
        with open(name + ".json", "rb") as handle:
            info = json.loads(handle.read(INFO_LIMIT_BYTES).decode("utf-8", "replace"))
    except (OSError, ValueError):
        info = None
    if not isinstance(info, dict):
        tail = read_tail(name + ".stderr", 300).strip().splitlines()
        return None, "is not a Python that runs the probes' check (exit %s%s)" % (
            outcome.returncode, ": " + tail[-1] if tail else ""), False
    return info, None, False


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
            info, problem, unused_timed_out = inspect_candidate(candidate, timeout_s, workdir, index, "scan")
            entries.append(inspected(candidate, info, problem))
        reuse_proof(entries, proven)
        for unused_attempt in range(len(entries)):
            index = best_unconfirmed(entries)
            if index is None:
                break
            candidate = {"path": entries[index]["path"], "source": entries[index]["source"]}
            info, problem, timed_out = inspect_candidate(candidate, timeout_s, workdir, index, "import")
            if timed_out:
                # a loaded host, not a broken Python: keep what its scan found, and say it (never fall back to a
                # Python without torch, whose probes would then say "not installed")
                entries[index] = dict(entries[index], import_timed_out=problem)
            else:
                entries[index] = inspected(candidate, info, problem)
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
    return dict(choose(entries, sys.executable), duration_s=round(time.monotonic() - started, 3))
