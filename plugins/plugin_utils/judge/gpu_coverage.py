# -*- coding: utf-8 -*-
# Copyright: gpufleet.validation contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Whether a probe that measures the host's GPUs together (pairs, an all-reduce) ran over every GPU the host should
have (the rule context's expected_gpus): its pass would otherwise speak for GPUs it never saw."""
from __future__ import annotations

from typing import Any, Dict, Optional

from .check_helpers import make_check
from .model import Check


def short_of_host(what: str, gpus: int, rule: Dict[str, Any], host: str, context: Any) -> Optional[Check]:
    """A fail when the probe ran over fewer GPUs than the host should have: its pass would speak for GPUs it never saw."""
    expected = getattr(context, "expected_gpus", None)
    if not gpus or not isinstance(expected, int) or isinstance(expected, bool) or gpus >= expected:
        return None
    source = getattr(context, "expected_gpus_source", "") or "the host's expected GPU count"
    return make_check(rule, host, "fail", "%s %d of the %d GPUs this host should have (%s): the GPUs missing from it were "
                      "never measured" % (what, gpus, expected, source), value=gpus, unit="GPUs", reference=expected,
                      reference_source=source, threshold=">= %d GPUs" % expected)


def covered(what: str, gpus: int, rule: Dict[str, Any], host: str, context: Any) -> Check:
    expected = getattr(context, "expected_gpus", None)
    if not isinstance(expected, int) or isinstance(expected, bool):
        return make_check(rule, host, "skip", "%s %d GPUs; how many this host should have is not known" % (what, gpus),
                          value=gpus, unit="GPUs")
    return make_check(rule, host, "pass", "%s %d GPUs, every one this host should have (%s)" % (
        what, gpus, getattr(context, "expected_gpus_source", "")), value=gpus, unit="GPUs", reference=expected,
        reference_source=getattr(context, "expected_gpus_source", ""), threshold=">= %d GPUs" % expected)


def gpus_covered(what: str, gpus: int, rule: Dict[str, Any], host: str, context: Any) -> Check:
    """A fail when short of the host's GPUs, else a pass (or a skip when how many it should have is not known)."""
    return short_of_host(what, gpus, rule, host, context) or covered(what, gpus, rule, host, context)
