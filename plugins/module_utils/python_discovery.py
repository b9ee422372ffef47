# -*- coding: utf-8 -*-
# Copyright: gpufleet.validation contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Which of a host's Pythons runs the probes: the candidates, what each can import, and the choice with its reason.

Pure logic (the module gpufleet.validation.find_python runs the candidates); nothing here imports Ansible.
"""
from __future__ import annotations

import glob
import os

MINIMUM_VERSION = (3, 9)
MAX_CANDIDATES = 24
PROBLEM_LIMIT_CHARS = 300

SOURCE_USER = "gpufleet_python_candidates"
SOURCE_ANSIBLE = "the interpreter Ansible uses"
SOURCE_PATH = "python3 on PATH"

# Where torch environments usually live; globs, ~ is the connecting user's home. Tried in this order after the user's
# own candidates, the interpreter Ansible uses, python3 on PATH and the active virtualenv or conda environment.
COMMON_LOCATIONS = (
    "~/.venv/bin/python3",
    "~/venv/bin/python3",
    "~/miniforge3/bin/python3",
    "~/miniconda3/bin/python3",
    "~/anaconda3/bin/python3",
    "~/mambaforge/bin/python3",
    "~/miniforge3/envs/*/bin/python3",
    "~/miniconda3/envs/*/bin/python3",
    "~/anaconda3/envs/*/bin/python3",
    "/opt/conda/bin/python3",
    "/opt/conda/envs/*/bin/python3",
    "/opt/*/bin/python3",
    "/opt/*/.venv/bin/python3",
    "/opt/*/venv/bin/python3",
    "/usr/local/bin/python3",
    "/usr/bin/python3",
)

# Run as `<candidate> -B -c INSPECT_SOURCE <out path> scan|import` with the environment a probe gets; writes what the
# candidate has as JSON to <out path>. "scan" finds torch without importing it (torch/version.py, the file torch.version
# is, read as literals: milliseconds where an import takes seconds); "import" imports it, to confirm the candidate chosen.
# Written for any Python that can run it, so that an old one still says its version.
INSPECT_SOURCE = """
import json, sys
info = {"executable": sys.executable, "prefix": sys.prefix, "version": list(sys.version_info[:3])}
def failure(exc):
    return "%s: %s" % (type(exc).__name__, str(exc)[:300])
def torch_found():
    import ast, importlib.util, os
    spec = importlib.util.find_spec("torch")
    if spec is None or not spec.submodule_search_locations:
        raise ImportError("No module named 'torch'")
    path = os.path.join(list(spec.submodule_search_locations)[0], "version.py")
    values = {}
    with open(path) as handle:
        for node in ast.parse(handle.read()).body:
            target = node.targets[0] if isinstance(node, ast.Assign) and len(node.targets) == 1 else getattr(
                node, "target", None) if isinstance(node, ast.AnnAssign) else None
            if isinstance(target, ast.Name) and getattr(node, "value", None) is not None:
                try:
                    values[target.id] = ast.literal_eval(node.value)
                except ValueError:
                    pass
    return {"version": str(values.get("__version__", "?")), "cuda": values.get("cuda"), "hip": values.get("hip")}
def fingerprint():
    # What an import of torch here depends on, cheaply: the interpreter, torch's version file and the directory torch is
    # installed in (pip and conda change its modification time when they install or remove anything there).
    import importlib.util, os
    found = {}
    executable = os.path.realpath(sys.executable)
    info = os.stat(executable)
    found["interpreter"] = [executable, info.st_ino, info.st_size, info.st_mtime_ns]
    spec = importlib.util.find_spec("torch")
    if spec is not None and spec.submodule_search_locations:
        package = os.path.realpath(list(spec.submodule_search_locations)[0])
        for key, path in (("torch_version_file", os.path.join(package, "version.py")),
                          ("packages_dir", os.path.dirname(package))):
            info = os.stat(path)
            found[key] = [path, info.st_ino, info.st_size, info.st_mtime_ns]
    return found
try:
    info["fingerprint"] = fingerprint()
except BaseException as exc:
    info["fingerprint_error"] = failure(exc)
try:
    if sys.argv[2] == "import":
        import torch
        version = getattr(torch, "version", None)
        info["torch"] = {"version": str(getattr(torch, "__version__", "?")),
                         "cuda": getattr(version, "cuda", None), "hip": getattr(version, "hip", None)}
        info["torch_imported"] = True
    else:
        info["torch"] = torch_found()
except BaseException as exc:
    info["torch_error"] = failure(exc)
try:
    import pynvml
    info["nvml"] = {"module": getattr(pynvml, "__file__", None), "version": None}
    try:
        from importlib.metadata import version as distribution_version
        info["nvml"]["version"] = distribution_version("nvidia-ml-py")
    except BaseException:
        pass
except BaseException as exc:
    info["nvml_error"] = failure(exc)
with open(sys.argv[1], "w") as handle:
    json.dump(info, handle)
"""


def candidate_paths(user_candidates, ansible_python, environ, python3_on_path, home):
    """Every place to look, in order, as [{"path", "source"}]: the user's candidates (globs allowed), the interpreter
    Ansible uses, python3 on PATH, $VIRTUAL_ENV and $CONDA_PREFIX, then COMMON_LOCATIONS. Each path once; a fixed
    location that does not exist is left out, a candidate the user named is kept (so that its absence is reported)."""
    seen = set()
    found = []

    def add(path, source, keep_missing=False):
        path = os.path.abspath(path)
        # python, python3 and python3.12 of one bin directory that lead to one file are one environment; a virtualenv's
        # python leads to its base's file from another directory, and is another environment.
        environment = (os.path.dirname(path), os.path.realpath(path))
        if path in seen or environment in seen or not (keep_missing or os.path.exists(path)):
            return
        seen.update((path, environment))
        found.append({"path": path, "source": source})

    for entry in user_candidates or ():
        literal = _expand(entry, home)
        # a path that exists as written is that path, brackets and all; else the entry's own wildcards make it a glob
        if os.path.exists(literal) or not glob.has_magic(_own_part(entry)):
            add(literal, SOURCE_USER, keep_missing=True)
        else:
            for path in sorted(glob.glob(_expand(entry, home, escape_home=True))):
                add(path, SOURCE_USER)
    if ansible_python:
        add(ansible_python, SOURCE_ANSIBLE)
    if python3_on_path:
        add(python3_on_path, SOURCE_PATH)
    for variable in ("VIRTUAL_ENV", "CONDA_PREFIX"):
        if environ.get(variable):
            add(os.path.join(environ[variable], "bin", "python3"), "$%s" % variable)
    for pattern in COMMON_LOCATIONS:
        for path in sorted(glob.glob(_expand(pattern, home, escape_home=True))):
            add(path, "common location %s" % pattern)
    return found


def _expands_home(path, home):
    return bool(home) and (path == "~" or path.startswith("~/"))


def _own_part(path):
    """What of a candidate is the user's own text: all of it but a leading ~ (the home is never a pattern)."""
    return path[1:] if path.startswith("~") else path


def _expand(path, home, escape_home=False):
    """~ as the connecting user's home; escape_home: the home's [, * and ? as literal characters of a glob pattern (a
    home named 'home dir [x]' must not glob the neighbouring 'home dir x')."""
    if _expands_home(path, home):
        return (glob.escape(home) if escape_home else home) + path[1:]
    return path


def not_runnable(path):
    """Why ``path`` cannot be run as an interpreter, or None."""
    if not os.path.exists(path):
        return "does not exist"
    if not os.path.isfile(path):
        return "is not a file"
    if not os.access(path, os.X_OK):
        return "is not executable by this user"
    return None


def inspected(candidate, info, problem):
    """The candidate with what it reported (``info``, the JSON INSPECT_SOURCE wrote) or why it reported nothing."""
    entry = dict(candidate)
    if problem is not None:
        entry.update(runs=False, problem=problem[:PROBLEM_LIMIT_CHARS])
        return entry
    version = info.get("version") if isinstance(info.get("version"), list) else []
    torch = info.get("torch") if isinstance(info.get("torch"), dict) else None
    nvml = info.get("nvml") if isinstance(info.get("nvml"), dict) else None
    entry.update(runs=True, python_version=".".join(str(part) for part in version[:3]),
                 prefix=str(info.get("prefix") or ""), executable=str(info.get("executable") or ""),
                 torch=_text(torch.get("version")) if torch else None,
                 torch_cuda=_text(torch.get("cuda")) if torch else None,
                 torch_hip=_text(torch.get("hip")) if torch else None,
                 torch_problem=_text(info.get("torch_error")), torch_imported=bool(info.get("torch_imported")),
                 nvml=(_text(nvml.get("version")) or "version unknown") if nvml else None,
                 nvml_problem=_text(info.get("nvml_error")),
                 fingerprint=info.get("fingerprint") if isinstance(info.get("fingerprint"), dict) else None)
    if tuple(part for part in version[:2] if isinstance(part, int)) < MINIMUM_VERSION:
        entry["problem"] = "Python %s is older than %d.%d, which the probes need" % (
            entry["python_version"] or "of unknown version", MINIMUM_VERSION[0], MINIMUM_VERSION[1])
    return entry


def _text(value):
    return None if value is None else str(value)[:PROBLEM_LIMIT_CHARS]


def capability(entry):
    """What a candidate offers the probes, best first when sorted descending: torch with CUDA, NVML, torch at all."""
    if not entry.get("runs") or entry.get("problem"):
        return (0, 0, 0)
    return (int(bool(entry.get("torch_cuda"))), int(bool(entry.get("nvml"))), int(bool(entry.get("torch"))))


def best_unconfirmed(entries):
    """Index of the candidate that would be chosen, when it has torch that no import has confirmed yet; else None."""
    ranked = [(capability(entry), -index) for index, entry in enumerate(entries)]
    if not ranked:
        return None
    best_capability, negative_index = max(ranked)
    best = entries[-negative_index]
    if best_capability[2] and not best.get("torch_imported") and not best.get("import_timed_out"):
        return -negative_index
    return None


PROOF_KEYS = ("path", "executable", "torch", "torch_cuda", "nvml", "fingerprint")


def import_proof(choice, run_id):
    """What a later run may reuse of this choice: the chosen candidate, when its torch import was confirmed (here, or in
    the run it names) and its fingerprint was taken; else None."""
    if not isinstance(choice, dict):
        return None
    for entry in choice.get("candidates") or ():
        if isinstance(entry, dict) and entry.get("chosen") and entry.get("torch_imported") and \
                isinstance(entry.get("fingerprint"), dict) and "torch_version_file" in entry["fingerprint"]:
            proof = {key: entry.get(key) for key in PROOF_KEYS}
            proof["run_id"] = str(entry.get("import_proven_in") or run_id)
            return proof
    return None


def reuse_proof(entries, proof):
    """Mark the candidate that would be chosen as imported, without importing torch again, when an earlier run proved
    the import in the same environment: the same path, interpreter, torch build, nvidia-ml-py, and an unchanged
    fingerprint (interpreter, torch's version file, the directory torch is installed in). Returns whether it did."""
    index = best_unconfirmed(entries)
    if index is None or not isinstance(proof, dict) or not isinstance(proof.get("fingerprint"), dict):
        return False
    entry = entries[index]
    if any(entry.get(key) != proof.get(key) for key in PROOF_KEYS):
        return False
    entry.update(torch_imported=True, import_proven_in=str(proof.get("run_id") or "an earlier run"))
    return True


def summary(entry):
    """One candidate in a few words: '/usr/bin/python3 (python3 on PATH): Python 3.12.3, torch 2.8.0 (CUDA 12.8),
    nvidia-ml-py 13.580.65'."""
    return "%s (%s): %s" % (entry["path"], entry["source"], candidate_offer(entry))


def candidate_offer(entry):
    """What one candidate offers, or why it offers nothing: 'Python 3.12.3, torch 2.8.0 (CUDA 12.8), no nvidia-ml-py'."""
    if not entry.get("runs"):
        return str(entry.get("problem") or "did not run")
    parts = ["Python %s" % entry.get("python_version")]
    if entry.get("problem"):
        parts.append(entry["problem"])
    elif entry.get("torch"):
        build = "CUDA %s" % entry["torch_cuda"] if entry.get("torch_cuda") else (
            "ROCm %s" % entry["torch_hip"] if entry.get("torch_hip") else "CPU only")
        parts.append("torch %s (%s)" % (entry["torch"], build))
    else:
        parts.append("no torch (%s)" % (entry.get("torch_problem") or "not importable"))
    if not entry.get("problem"):
        parts.append("nvidia-ml-py %s" % entry["nvml"] if entry.get("nvml") else "no nvidia-ml-py")
    return ", ".join(parts)


def choose(entries, ansible_python):
    """The record of the choice: the candidate with the most capability (the earliest of equals), or, when none has
    torch or nvidia-ml-py, the interpreter Ansible uses, with a reason that lists what was tried."""
    ranked = [(capability(entry), -index, entry) for index, entry in enumerate(entries)]
    best = max(ranked, key=lambda item: (item[0], item[1]))[2] if ranked else None
    if best is not None and capability(best) > (0, 0, 0):
        for entry in entries:
            entry["chosen"] = entry is best
        others = len(entries) - 1
        tried = ", the best of %d tried" % len(entries) if others else ", the only one tried"
        why = "%s, with %s%s" % (best["source"], _offer(best), tried)
        if best.get("import_timed_out"):
            why += ("; its import check %s (a loaded host?): chosen by what its scan found, and the probes import torch "
                    "under their own, longer limits; where they fail, this is the cause" % best["import_timed_out"])
        if best.get("import_proven_in"):
            why += ("; torch's import not repeated: run %s proved it, and the interpreter, torch's version file and the "
                    "directory torch is installed in are unchanged since" % best["import_proven_in"])
        return {"python": best["path"], "source": best["source"], "found": True, "why": why, "candidates": entries}
    for entry in entries:
        entry["chosen"] = False
    tried = "; ".join(summary(entry) for entry in entries) or "no candidate exists"
    return {"python": ansible_python, "source": SOURCE_ANSIBLE, "found": False,
            "why": "no Python on the host has torch or nvidia-ml-py (tried: %s); set gpufleet_python to the one that "
                   "has them, or add its path to gpufleet_python_candidates" % tried,
            "candidates": entries}


def _offer(entry):
    offered = []
    if entry.get("torch_cuda"):
        offered.append("torch built for CUDA")
    elif entry.get("torch"):
        offered.append("torch (no CUDA build)")
    offered.append("nvidia-ml-py" if entry.get("nvml") else "no nvidia-ml-py")
    return " and ".join(offered)
