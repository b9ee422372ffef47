"""collective_hosts: its section of the dossier (the collective's view) and its part of the fleet index, one entry per
cross-host all-reduce."""
from __future__ import annotations

import dataclasses
from typing import Any, Dict, List, Tuple

from ...probe_kit.kit import MEASURED_STATUSES, MISSING, dig, collective_view, ProbeSection


def cross_host_runs(hosts: List[Any]) -> List[Dict[str, Any]]:
    """The cross-host all-reduces of a run (collective_hosts results), one per rendezvous, for the fleet index.

    hosts: the run's HostModel list. Every member host reports the same curve; the lowest node rank's is shown, and
    a member that did not report (unreachable, failed) is listed with its status and reason.
    """
    clusters: Dict[Tuple[Any, Any, Any], Dict[str, Any]] = {}
    for host in hosts:
        entry = host.probes.get("collective_hosts")
        if entry is None:
            continue
        try:
            data = entry.data
        except ValueError as exc:  # its result was replaced since the report loaded it: shown as the member's reason
            data, entry = {}, dataclasses.replace(entry, status="error", reason=str(exc))
        setup = dig(data, "hosts")
        key = (setup.get("master_addr"), setup.get("master_port"), setup.get("nnodes")) if isinstance(setup, dict) else \
            ("?", "?", "?")
        cluster = clusters.setdefault(key, {"rendezvous": "%s:%s" % key[:2], "nnodes": key[2], "members": [], "shown": None,
                                            "shown_rank": None})
        rank = setup.get("node_rank") if isinstance(setup, dict) else None
        cluster["members"].append({"host": host.name, "node_rank": rank if rank is not None else "—", "status": entry.status,
                                   "reason": entry.reason})
        if entry.status in MEASURED_STATUSES and isinstance(rank, int) and (cluster["shown_rank"] is None or rank < cluster["shown_rank"]):
            cluster["shown"], cluster["shown_rank"] = data, rank
    runs = []
    for key in sorted(clusters, key=str):
        cluster = clusters[key]
        members = sorted(cluster["members"], key=lambda member: (str(member["node_rank"]), member["host"]))
        view = collective_view(cluster["shown"]) if cluster["shown"] is not None else {"note": "", "plots": [], "tables": []}
        backend = dig(cluster["shown"], "plan", "backend") if cluster["shown"] is not None else MISSING
        world = dig(cluster["shown"], "plan", "world_size") if cluster["shown"] is not None else MISSING
        runs.append({"rendezvous": cluster["rendezvous"], "nnodes": cluster["nnodes"], "members": members,
                     "backend": backend if isinstance(backend, str) else "—", "world_size": world if isinstance(world, int) else "—",
                     "view": view})
    return runs


SECTION = ProbeSection(collective_view, fleet_view=cross_host_runs)
