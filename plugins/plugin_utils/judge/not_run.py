# -*- coding: utf-8 -*-
# Copyright: gpufleet.validation contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The probes of the profile that were not run on a host, and why: with gpufleet_act=slurm, a node Slurm shows
allocated or mixed (a job runs there) gets only the probes that cannot disturb a job (their declarations say so). What
the others would have proven is not proven: one host check says which and why, with the action to re-run when the node
is idle. Pure Python; it names no probe."""
from __future__ import annotations

from typing import Any, Optional

from .busy import BUSY_ACTION
from .model import Check

NOT_RUN_CHECK = "host.not_run"


def not_run_check(host: str, not_run: Any) -> Optional[Check]:
    """The check of a host's stored not_run record ({"probes": [...], "why": ...}), or None where every probe ran."""
    if not isinstance(not_run, dict) or not isinstance(not_run.get("probes"), list) or not not_run["probes"]:
        return None
    probes = [str(probe) for probe in not_run["probes"]]
    why = str(not_run.get("why") or "no reason recorded")
    return Check(id=NOT_RUN_CHECK, host=host, probe="", status="warn",
                 reason="not run here: %s (%s); what they prove is not proven on this host: re-run when the node is idle"
                 % (", ".join(probes), why), value=probes, reference=[], threshold="every probe of the profile ran",
                 action=BUSY_ACTION)
