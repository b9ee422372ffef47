# -*- coding: utf-8 -*-
# Copyright: gpufleet.validation contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""A probe's envelope as the judge reads it: the data of a measured result, or of one that found its subject absent."""
from __future__ import annotations

from typing import Any, Dict, Mapping, Optional

from ...module_utils.envelope_statuses import MEASURED_STATUSES


def measured_data(envelope: Any) -> Optional[Dict[str, Any]]:
    """The data of a result whose status says it measured something; None otherwise."""
    if isinstance(envelope, Mapping) and envelope.get("status") in MEASURED_STATUSES and isinstance(envelope.get("data"), dict):
        return envelope["data"]
    return None


def unmeasured_data(envelope: Any) -> Optional[Dict[str, Any]]:
    """The data of a probe that ran but found its subject absent (status unavailable): the probe that describes the
    machine may still say what it has, without a driver."""
    if isinstance(envelope, Mapping) and envelope.get("status") == "unavailable" and isinstance(envelope.get("data"), dict):
        return envelope["data"]
    return None
