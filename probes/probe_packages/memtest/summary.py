"""One entry per device from its workers' records and its counters read before and after: what was tested, how much
of the free memory that is, the errors found, what the counters say, and the device's status (pure: no torch)."""
from __future__ import annotations

from typing import Any, Dict, List

from probe_packages.memtest.counters import changes
from probelib.fields import is_number, unavailable
from probelib.sweep import significant

DEVICE_KEYS = ("kind", "index", "name", "uuid", "memory_total_mib", "compute_capability")


def device_entry(device: Dict[str, Any], records: List[Dict[str, Any]], free_bytes: Any, before: Dict[str, Any],
                 after: Dict[str, Any]) -> Dict[str, Any]:
    """records: the run record's workers on this device."""
    ok = [record for record in records if record["status"] == "ok"]
    problems = ["worker %d: %s" % (record["worker"], record.get("error", "no result")) for record in records
                if record["status"] != "ok"]
    tested = sum(record["result"]["buffer_bytes"] for record in ok)
    if not is_number(free_bytes):
        free_bytes = ok[0]["result"]["free_memory_bytes"] if ok else unavailable("no worker read the free memory")
    if not records:
        status = "error"
        problems.append("no worker ran on this device")
    else:
        status = "ok" if not problems else "partial" if ok else "error"
    return {
        "device": {key: device.get(key) for key in DEVICE_KEYS},
        "status": status,
        "error": {"type": "WorkerFailed", "message": "; ".join(problems)} if status == "error" else None,
        "problems": problems,
        "workers": [record["worker"] for record in records],
        "free_memory_bytes": free_bytes,
        "tested_bytes": tested,
        "tested_pct_of_free": (significant(100.0 * tested / free_bytes) if is_number(free_bytes) and free_bytes > 0
                               else unavailable("the free memory is unknown")),
        "errors": sum(record["result"]["errors"] for record in ok),
        "counters_before": before,
        "counters_after": after,
        "counter_changes": changes(before, after),
    }
