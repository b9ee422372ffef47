"""fusion: an elementwise chain as 4 eager kernels and as one compiled kernel, with the bytes each must move.

Its achieved bandwidth is set against the copy plateau membw measured on the same device in the same run: that is
derived on the controller from this run's stored membw result, as membw gives it (run.py: needs=("membw",)). A
parameter the user gave always wins.
"""
from __future__ import annotations

from typing import Any, Dict, List, Tuple

from ...probe_kit.kit import Handed

NO_MEMBW_RESULT = ("this run has no measured membw result on this host (membw did not run before fusion, or it "
                   "measured nothing), so there is no copy plateau to set the achieved bandwidth against")


def fusion_inputs(params: Dict[str, Any], handed: Handed) -> Tuple[Dict[str, Any], List[str]]:
    """membw_bandwidth_gbps (and where it came from, or why there is none) from what this run's membw result gives
    (membw's gives=: bandwidth_gbps, missing, sources; None where membw measured nothing)."""
    if "membw_bandwidth_gbps" in params:
        return dict(params), []
    membw = handed.given("membw")
    bandwidths, missing = (membw["bandwidth_gbps"], membw["missing"]) if membw is not None else ({}, [])
    derived: Dict[str, Any] = {}
    if bandwidths:
        derived["membw_bandwidth_gbps"] = bandwidths
        source = "this run's membw headline bandwidth (from: %s)" % ", ".join(membw["sources"])
        if missing:
            source += "; without one: %s" % "; ".join(missing)
        note = "membw_bandwidth_gbps from this run's membw result"
    elif membw is None:
        source = note = NO_MEMBW_RESULT
    else:
        source = note = "this run's membw result has no headline bandwidth: %s" % ("; ".join(missing) or "no device")
    if "membw_bandwidth_source" not in params:
        derived["membw_bandwidth_source"] = source
    return dict(params, **derived), [note]
