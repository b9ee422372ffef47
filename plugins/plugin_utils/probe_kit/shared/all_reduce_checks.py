"""The all-reduce's checks that collective and collective_hosts share (the same result layout): its curves by name and
whether every curve's reduced data was verified."""
from __future__ import annotations

from typing import Any, Dict, List

from ...judge.check_helpers import make_check
from ...judge.model import Check


def curves_by_name(data: Dict[str, Any]) -> Dict[str, Dict[str, Any]]:
    """{name: curve} of an all-reduce result's curves."""
    curves = data.get("curves")
    found = {}
    for curve in curves if isinstance(curves, list) else []:
        if isinstance(curve, dict) and isinstance(curve.get("name"), str):
            found[curve["name"]] = curve
    return found


def collective_verified(host: str, data: Dict[str, Any], rule: Dict[str, Any], context: Any) -> List[Check]:
    """Every curve ran and the all-reduced data matched the expected sums at every size."""
    checks: List[Check] = []
    for name, curve in sorted(curves_by_name(data).items()):
        if curve.get("error"):
            checks.append(make_check(rule, host, "error", "all-reduce curve %s failed: %s" % (name, curve["error"])))
            continue
        sweep = [point for point in curve.get("sweep") or [] if isinstance(point, dict)]
        wrong = [point.get("size_bytes") for point in sweep if point.get("verified") is False]
        if wrong:
            checks.append(make_check(rule, host, "fail", "all-reduce curve %s: the reduced data was wrong at %d of %d sizes (%s bytes): "
                                     "a rank or a link corrupts data; do not use the node" % (
                                         name, len(wrong), len(sweep), ", ".join(str(size) for size in wrong[:8])),
                                     value=len(wrong), reference=0, threshold="every size verified"))
        elif sweep:
            checks.append(make_check(rule, host, "pass", "all-reduce curve %s: the data was checked at all %d sizes (%s to %s bytes)"
                                     % (name, len(sweep), sweep[0].get("size_bytes"), sweep[-1].get("size_bytes")),
                                     value=0, reference=0, threshold="every size verified"))
    return checks
