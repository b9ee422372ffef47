# -*- coding: utf-8 -*-
# Copyright: gpufleet.validation contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The envelope's statuses, defined once for the controller (schemas/envelope.schema.json's enum; a test pins them,
and the probes' own copy in probes/probelib/statuses.py, to it)."""
from __future__ import annotations

# What a probe reports, or the module reports on its behalf (it crashed, hung, wrote garbage).
PROBE_STATUSES = ("ok", "partial", "unavailable", "error", "timeout")
# Every status a stored envelope may have: the controller adds unreachable when the host could not be reached.
ENVELOPE_STATUSES = PROBE_STATUSES + ("unreachable",)
# The statuses whose data holds measurements (partial: some parts failed, data.errors says which).
MEASURED_STATUSES = ("ok", "partial")
# The statuses of a probe that did not run to an answer: the host failed it.
FAILED_STATUSES = ("error", "timeout", "unreachable")
# How bad each status is, worse higher (a host's state is its worst probe's status); error and timeout are equally bad.
STATUS_RANK = {"ok": 0, "unavailable": 1, "partial": 2, "timeout": 3, "error": 3, "unreachable": 4}
