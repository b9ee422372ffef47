"""The status and reason of a probe whose data holds one entry per device, each with its own status (membw, fusion).

An entry is ``{"device": {"kind", "index", "name"}, "status": ok | partial | error, "error": {"message"} or None,
"problems": [...]}``. ok: every device ok; partial: a device measured something and not every one is ok; error: none
measured (no device, or every one error). The reason lists the devices that are not ok, each with its status and
problems (probelib.outcome words the rest).
"""
from __future__ import annotations

from typing import Any, Callable, Dict, List, Tuple

from probelib import outcome


def decide(results: List[Dict[str, Any]]) -> Tuple[str, str]:
    failed = [entry for entry in results if entry["status"] != outcome.OK]
    return outcome.decide(failed, describe_device, measured(results), "")


def measured(results: List[Dict[str, Any]]) -> bool:
    return any(entry["status"] != outcome.ERROR for entry in results)


def describe_device(entry: Dict[str, Any]) -> str:
    what = "%s:%d (%s)" % (entry["device"]["kind"], entry["device"]["index"], entry["device"]["name"])
    details = [entry["error"]["message"]] if entry.get("error") else []
    details += [problem for problem in entry.get("problems", []) if problem not in details]
    return "%s %s: %s" % (what, entry["status"], "; ".join(details))


def close_sweep(entry: Dict[str, Any], points: List[Dict[str, Any]], point_words: Callable[[Dict[str, Any]], str],
                problems: List[str]) -> Dict[str, Any]:
    """A device's entry finished from its sweep's points: error (NothingMeasured, each point's words, status and reason)
    where no point was measured, else partial where problems were noted; its problems recorded."""
    if not any(point["status"] == "measured" for point in points):
        entry["status"] = "error"
        entry["error"] = {"type": "NothingMeasured", "message": "no size was measured: " + "; ".join(
            "%s %s (%s)" % (point_words(point), point["status"], point["reason"]) for point in points)}
    elif problems:
        entry["status"] = "partial"
    entry["problems"] = list(problems)
    return entry
