# -*- coding: utf-8 -*-
# Copyright: gpufleet.validation contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The Python a host's probes run with when the task names none, as the probe action holds it between its steps."""
from __future__ import annotations

from ..module_utils.envelope_statuses import MEASURED_STATUSES
from ..module_utils.python_discovery import SOURCE_ANSIBLE


class PythonFound(object):
    """The Python chosen for a host when the task names none: recorded by an earlier probe of this playbook run, or
    found by gpufleet.validation.find_python; what a probe that could not use it is told."""

    def __init__(self, choice, inputs, candidates):
        self.choice = choice
        self.inputs = inputs
        self.candidates = list(candidates or [])

    def found(self, choice, failure_text):
        if not isinstance(choice, dict) or not choice.get("python"):
            # The module could not run (no usable interpreter for Ansible itself): the probe then fails as itself.
            choice = {"python": None, "source": SOURCE_ANSIBLE, "found": False, "candidates": [],
                      "why": "the Python on the host could not be looked for: %s" % failure_text}
        self.choice = choice

    def explain(self, envelope):
        """A probe left unavailable under a fallback interpreter says what discovery tried; one that measured nothing
        under a Python whose torch import did not finish in discovery's limit names that as the cause."""
        if self.choice is None or envelope.get("status") in MEASURED_STATUSES + ("unreachable",):
            return
        if self.choice.get("found"):
            if not any(isinstance(entry, dict) and entry.get("chosen") and entry.get("import_timed_out")
                       for entry in self.choice.get("candidates") or ()):
                return
        elif envelope.get("status") != "unavailable":
            return
        envelope["reason"] = "%s; Python discovery: %s" % (envelope.get("reason") or envelope.get("status"), self.choice["why"])
