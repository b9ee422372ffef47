"""membw's together worker against the alone copy: the reference at the worker's buffer size, the share of it the worker
is owed (alone / workers on its GPU) and how much of that it reached. The check and the dossier read it the same way."""
from __future__ import annotations

from typing import Any, Dict, NamedTuple, Optional

from ...probe_kit.kit import is_unavailable, number_or_none, device_sharers


class Share(NamedTuple):
    alone_gbps: float   # the alone copy at the worker's size
    sharing: int        # workers on the worker's GPU
    owed_gbps: float    # alone_gbps / sharing
    pct: float          # the worker's bandwidth as % of owed_gbps


def reference_at(reference: Any, buffer_mib: Any) -> Optional[Dict[str, Any]]:
    """The alone reference timed at buffer_mib (the headline repeats, or one of other_sizes), None where there is none."""
    if not isinstance(reference, dict) or is_unavailable(reference):
        return None
    for candidate in [reference] + [other for other in reference.get("other_sizes") or [] if isinstance(other, dict)]:
        if candidate.get("buffer_mib") == buffer_mib:
            return candidate
    return None


def share_of(worker: Dict[str, Any], result: Dict[str, Any], reference: Any) -> Optional[Share]:
    """The worker's share, or None where its bandwidth or the alone copy at its size is not a number."""
    value = number_or_none(result.get("bandwidth_gbps"))
    alone = reference_at(reference, result.get("buffer_mib"))
    alone_gbps = number_or_none(alone.get("bandwidth_gbps")) if alone is not None else None
    if value is None or alone_gbps is None or alone_gbps <= 0:
        return None
    sharing = device_sharers(worker)
    owed = alone_gbps / sharing
    return Share(alone_gbps, sharing, owed, 100.0 * value / owed)
