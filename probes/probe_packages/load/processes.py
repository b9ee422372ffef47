"""The processes seen on the GPUs during the load, and which of them are not this probe."""
from __future__ import annotations

from typing import Any, Dict, List, Sequence, Tuple

from probelib.fields import is_unavailable
from probelib.measure import foreign_processes

NAMESPACE_NOTE = ("NVML listed processes but never this probe's own pid while the load ran: NVML reports pids of "
                  "another PID namespace (e.g. the host's, seen from a container), so this probe's own process cannot be "
                  "told apart and is probably among those listed as unexpected")


def own_pids(proc_root: str = "/proc") -> List[int]:
    """This process's pid, and its pid in every PID namespace it belongs to that /proc shows (NSpid), sorted."""
    return sorted(foreign_processes.own_pids(proc_root))


def aggregate(observations: Sequence[Tuple[float, str, Any]], own: Sequence[int]) -> Dict[str, Any]:
    """observations: (t_s, GPU UUID, [{pid, name, kind, ...}] or unavailable) as the sampler took them.

    Returns {own_pids, seen: [{pid, name, kind, gpus, first_seen_s, last_seen_s, observations, own}], unexpected:
    [{pid, name, gpus, first_seen_s}], own_listed, note, rounds, unreadable: {uuid: first reason}}.
    """
    seen: Dict[int, Dict[str, Any]] = {}
    unreadable: Dict[str, str] = {}
    for t_s, uuid, listed in observations:
        if is_unavailable(listed):
            unreadable.setdefault(uuid, listed["unavailable"])
            continue
        for entry in listed:
            pid = entry["pid"]
            record = seen.setdefault(pid, {"pid": pid, "name": entry["name"], "kind": entry["kind"], "gpus": [],
                                           "first_seen_s": t_s, "last_seen_s": t_s, "observations": 0, "own": pid in own})
            if uuid not in record["gpus"]:
                record["gpus"].append(uuid)
            record["first_seen_s"] = min(record["first_seen_s"], t_s)
            record["last_seen_s"] = max(record["last_seen_s"], t_s)
            record["observations"] += 1
    ordered = sorted(seen.values(), key=lambda record: record["pid"])
    unexpected = [{"pid": record["pid"], "name": record["name"], "gpus": record["gpus"], "first_seen_s": record["first_seen_s"]}
                  for record in ordered if not record["own"]]
    own_listed = any(record["own"] for record in ordered)
    note = ""
    if ordered and not own_listed:
        note = NAMESPACE_NOTE
    return {"own_pids": list(own), "seen": ordered, "unexpected": unexpected, "own_listed": own_listed, "note": note,
            "rounds": len({entry[0] for entry in observations}), "unreadable": unreadable}
