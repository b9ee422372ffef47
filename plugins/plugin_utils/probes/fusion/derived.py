"""fusion: an elementwise chain as 4 eager kernels and as one compiled kernel, with the bytes each must move.

Its achieved bandwidth is set against the copy plateau membw measured on the same device in the same run: that is
derived on the controller from this run's stored membw result. A parameter the user gave always wins.
"""
from __future__ import annotations

from typing import Any, Dict, List, Tuple

from ...store.read import measured_data
from ..membw.judging import membw_headlines

NO_MEMBW_RESULT = ("this run has no measured membw result on this host (membw did not run before fusion, or it "
                   "measured nothing), so there is no copy plateau to set the achieved bandwidth against")


def headline_sources(membw_data: Dict[str, Any]) -> List[str]:
    """Where membw's headlines came from (plateau, quick_largest_size, largest_size_no_plateau), once each."""
    sources = []
    for entry in membw_data.get("devices") or []:
        source = (entry.get("headline") or {}).get("source") if isinstance(entry, dict) else None
        if isinstance(source, str) and source not in sources:
            sources.append(source)
    return sources


def fusion_inputs(host_path: str, params: Dict[str, Any]) -> Tuple[Dict[str, Any], List[str]]:
    """membw_bandwidth_gbps (and where it came from, or why there is none) from this run's membw result."""
    if "membw_bandwidth_gbps" in params:
        return dict(params), []
    membw_data = measured_data(host_path, "membw")
    bandwidths, missing = membw_headlines(membw_data)
    derived: Dict[str, Any] = {}
    if bandwidths:
        derived["membw_bandwidth_gbps"] = bandwidths
        source = "this run's membw headline bandwidth (from: %s)" % ", ".join(headline_sources(membw_data or {}))
        if missing:
            source += "; without one: %s" % "; ".join(missing)
        note = "membw_bandwidth_gbps from this run's membw result"
    elif membw_data is None:
        source = note = NO_MEMBW_RESULT
    else:
        source = note = "this run's membw result has no headline bandwidth: %s" % ("; ".join(missing) or "no device")
    if "membw_bandwidth_source" not in params:
        derived["membw_bandwidth_source"] = source
    return dict(params, **derived), [note]
