# -*- coding: utf-8 -*-
# Copyright: gpufleet.validation contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The dossier's account of the Python that ran the probes: given by gpufleet_python, or found on the host."""
from __future__ import annotations

from typing import Any, Dict, List, Mapping, Optional

from ...module_utils.python_discovery import candidate_offer
from ..store.run_dir import ANSIBLE_PYTHON


def python_view(inputs: Mapping[str, Any]) -> Optional[Dict[str, Any]]:
    """{python, how, candidates: [{path, source, offer, outcome}]} from the host's inputs.json; None when the run
    recorded neither (a run written before inputs.json existed)."""
    choice = inputs.get("python_choice")
    python = inputs.get("python")
    if not isinstance(choice, dict):
        if not isinstance(python, str) or not python:
            return None
        how = "not looked for: the run predates Python discovery" if python == ANSIBLE_PYTHON else \
            "given by gpufleet_python"
        return {"python": python, "how": how, "candidates": []}
    rows: List[Dict[str, str]] = []
    for entry in choice.get("candidates") or []:
        if not isinstance(entry, dict):
            continue
        rows.append({"path": str(entry.get("path", "")), "source": str(entry.get("source", "")),
                     "offer": candidate_offer(entry),
                     "outcome": ("chosen (torch's import proven in run %s, unchanged since)" % entry["import_proven_in"]
                                 if entry.get("import_proven_in") else "chosen") if entry.get("chosen") else "not chosen"})
    return {"python": str(choice.get("python") or "the interpreter Ansible uses"),
            "how": "found on the host: %s" % choice.get("why", "no reason recorded"), "candidates": rows}
