"""hostbw's together worker against the alone copies: per direction, the share of the alone rate the worker is owed (alone
/ the workers sharing its PCIe uplink) and how much of it it reached. The check and the dossier read it the same way."""
from __future__ import annotations

from typing import Any, Dict, NamedTuple, Optional

from ...probe_kit.kit import number_or_none, device_sharers

DIRECTIONS = ("h2d", "d2h")


class Share(NamedTuple):
    alone_gbps: float   # the alone pinned rate in this direction
    sharers: int        # workers on GPUs below the worker's root port, its own included
    owed_gbps: float    # alone_gbps / sharers
    pct: float          # the worker's rate as % of owed_gbps


def sharers_of(worker: Dict[str, Any], result: Dict[str, Any]) -> int:
    """The workers behind the worker's PCIe uplink, else (no uplink read) the workers on its device."""
    uplink = result.get("uplink_sharers")
    return uplink if isinstance(uplink, int) and not isinstance(uplink, bool) and uplink > 0 else device_sharers(worker)


def share_of(worker: Dict[str, Any], result: Dict[str, Any], reference: Any, direction: str) -> Optional[Share]:
    """The worker's share in one direction, or None where its rate or the alone rate is not a number."""
    value = number_or_none(result.get("%s_pinned_gbps" % direction))
    alone = number_or_none(reference.get("%s_pinned_gbps" % direction)) if isinstance(reference, dict) else None
    if value is None or alone is None or alone <= 0:
        return None
    sharers = sharers_of(worker, result)
    return Share(alone, sharers, alone / sharers, 100.0 * value * sharers / alone)
