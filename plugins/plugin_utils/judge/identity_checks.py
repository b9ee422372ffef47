# -*- coding: utf-8 -*-
# Copyright: gpufleet.validation contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""One machine is one host: hosts of a run that report the same GPU, by UUID or by board serial, are two inventory
names for one machine or copies of one result, and none of them passes until the inventory declares them aliases.

A declaration is an inventory group whose name begins with ALIAS_GROUP_PREFIX holding every host that shares the
GPUs (``gpufleet_alias_node17: {hosts: {node17: {}, node17-ib: {}}}``). The GPUs' identities are the machine's
(judge/machine_facts.py MachineFacts.identities, from the probe that describes it), and the UUIDs its measurements name.
"""
from __future__ import annotations

from typing import Dict, Iterable, List, Mapping, Optional, Set, Tuple

from .machine_facts import MachineFacts
from .model import Check

CHECK_ID = "fleet.same_gpus"
ALIAS_GROUP_PREFIX = "gpufleet_alias_"
_NAMED_AT_MOST = 4


def gpu_identities(facts: Optional[MachineFacts], measured_uuids: Iterable[Optional[str]] = ()) -> Set[str]:
    """The GPU identities one host reports: those of its machine facts, and "uuid <UUID>" of each GPU a measurement
    names (a copied measurement carries its GPUs too) unless the facts say the UUID is shared (a MIG parent GPU's)."""
    identities: Set[str] = set(facts.identities) if facts is not None else set()
    shared = facts.shared_uuids if facts is not None else frozenset()
    identities.update("uuid %s" % uuid for uuid in measured_uuids if isinstance(uuid, str) and uuid and uuid not in shared)
    return identities


def _sharing_sets(identities: Mapping[str, Set[str]]) -> List[List[str]]:
    """Hosts joined by any shared identity, transitively, each set sorted; sets of one host left out."""
    parent = {host: host for host in identities}

    def root(host: str) -> str:
        while parent[host] != host:
            parent[host] = parent[parent[host]]
            host = parent[host]
        return host

    first_host: Dict[str, str] = {}
    for host in sorted(identities):
        for identity in identities[host]:
            other = first_host.setdefault(identity, host)
            if other != host:
                parent[root(host)] = root(other)
    members: Dict[str, List[str]] = {}
    for host in sorted(identities):
        members.setdefault(root(host), []).append(host)
    return [hosts for hosts in members.values() if len(hosts) > 1]


def _declaring_group(hosts: List[str], groups: Mapping[str, Iterable[str]]) -> Optional[str]:
    shared = None
    for host in hosts:
        aliases = set(group for group in (groups.get(host) or ()) if group.startswith(ALIAS_GROUP_PREFIX))
        shared = aliases if shared is None else shared & aliases
    return sorted(shared)[0] if shared else None


def _named(items: List[str]) -> str:
    shown = ", ".join(items[:_NAMED_AT_MOST])
    return shown + (" and %d more" % (len(items) - _NAMED_AT_MOST) if len(items) > _NAMED_AT_MOST else "")


def same_gpu_checks(identities: Mapping[str, Set[str]], groups: Mapping[str, Iterable[str]], probe: str) -> Dict[str, List[Check]]:
    """identities: {host: gpu_identities(...)} of the hosts reached; groups: {host: its inventory groups}; probe: the
    one that describes the machine, whose checks these are.
    A check for each host that shares a GPU with another: fail, unless one alias group holds all the hosts sharing."""
    checks: Dict[str, List[Check]] = {}
    for hosts in _sharing_sets(identities):
        shared = _shared_identities(hosts, identities)
        declared = _declaring_group(hosts, groups)
        for host in hosts:
            others = [other for other in hosts if other != host]
            if declared:
                status, reason = "pass", ("reports the same GPUs as %s (%s): declared aliases of one machine (inventory group %s)"
                                          % (_named(others), _named(shared), declared))
            else:
                status, reason = "fail", ("these hosts report the same GPUs: an inventory alias or a copied result: %s share %s"
                                          % (_named(hosts), _named(shared)))
            checks.setdefault(host, []).append(Check(
                id=CHECK_ID, host=host, probe=probe, status=status, reason=reason, value=others,
                reference_source="the GPU UUIDs and board serials of this run's hosts",
                threshold="no GPU reported by two hosts, unless they are declared aliases"))
    return checks


def _shared_identities(hosts: List[str], identities: Mapping[str, Set[str]]) -> List[str]:
    """The identities reported by two or more of the hosts, UUIDs first."""
    seen: Set[str] = set()
    shared: Set[str] = set()
    for host in hosts:
        shared |= identities[host] & seen
        seen |= identities[host]
    return sorted(shared, key=lambda identity: (not identity.startswith("uuid "), identity))


MOVED_CHECK_ID = "fleet.gpus_moved"
MOVED_GROUP_PREFIX = "gpufleet_gpus_from_"


def moved_group(host: str) -> str:
    """The inventory group that declares this host's GPUs moved to its members: gpufleet_gpus_from_<host>, with every
    character of the name that a group name cannot hold as '_'."""
    return MOVED_GROUP_PREFIX + "".join(char if char.isascii() and (char.isalnum() or char == "_") else "_" for char in host)


def moved_gpu_checks(identities: Mapping[str, Set[str]], groups: Mapping[str, Iterable[str]],
                     last_reported: Mapping[str, Tuple[Tuple[str, ...], str]], probe: str) -> Dict[str, List[Check]]:
    """identities: {host: gpu_identities(...)} of this run's hosts; last_reported: {identity: (hosts, run id)}, the hosts
    of the newest earlier run that reported it (store/earlier_gpus.py). A check for each host with a GPU that other
    hosts reported last (not the host itself, nor a declared alias of it in this run): not validated (a GPU moved
    between machines, or a result copied from that host), unless the host is in the group gpufleet_gpus_from_<that
    host>, which declares the move."""
    checks: Dict[str, List[Check]] = {}
    for host in sorted(identities):
        aliases = set(group for group in (groups.get(host) or ()) if group.startswith(ALIAS_GROUP_PREFIX))
        by_reporter: Dict[Tuple[str, str], List[str]] = {}
        for identity in identities[host]:
            reported = last_reported.get(identity)
            if reported is None or host in reported[0]:
                continue
            if any(aliases & set(groups.get(other) or ()) for other in reported[0]):
                continue
            by_reporter.setdefault((reported[0][0], reported[1]), []).append(identity)
        for (other, run_id), moved in sorted(by_reporter.items()):
            moved.sort(key=lambda identity: (not identity.startswith("uuid "), identity))
            group = moved_group(other)
            if group in (groups.get(host) or ()):
                status, reason = "pass", ("reports GPUs that host %s reported last, in run %s (%s): a move declared by "
                                          "inventory group %s" % (other, run_id, _named(moved), group))
            else:
                status, reason = "warn", (
                    "not validated: its GPUs were last reported by another host, %s, in run %s (%s): a GPU moved "
                    "between machines, a host renamed, or a result copied from that host. A real move is declared by "
                    "putting this host in the inventory group %s" % (other, run_id, _named(moved), group))
            checks.setdefault(host, []).append(Check(
                id=MOVED_CHECK_ID, host=host, probe=probe, status=status, reason=reason, value=other, reference=run_id,
                reference_source="the GPUs the hosts of the earlier runs in this results directory reported last",
                threshold="no GPU another host reported last, unless the move is declared"))
    return checks
