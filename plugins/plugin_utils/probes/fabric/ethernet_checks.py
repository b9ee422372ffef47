# -*- coding: utf-8 -*-
# Copyright: gpufleet.validation contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Checks of the Ethernet interfaces: each physical NIC up with a carrier, one MTU across the RDMA-backed ones.

Virtual interfaces (veth, bridges, bonds, VLANs, tunnels, IPoIB) follow what they sit on and are not judged; a
physical NIC an operator left down on purpose is listed in the rule's ignore_interfaces.
"""
from __future__ import annotations

from typing import Any, Dict, List

from ...probe_kit.kit import make_check, Check
from .ports import listed


def _physical(data: Any) -> List[Dict[str, Any]]:
    interfaces, unused_why = listed(data, "ethernet")
    return [interface for interface in interfaces if interface.get("virtual") is False]


def ethernet_link(host: str, data: Dict[str, Any], rule: Dict[str, Any], context: Any) -> List[Check]:
    """warn for each physical NIC that is not up or has no carrier, with its name."""
    interfaces, why = listed(data, "ethernet")
    if why:
        return [make_check(rule, host, "skip", "the network interfaces could not be listed (%s)" % why)]
    physical = _physical(data)
    if not physical:
        return [make_check(rule, host, "skip", "no physical network interface (%d virtual): nothing to judge" % len(interfaces))]
    leave_out = [str(name) for name in (rule.get("params") or {}).get("ignore_interfaces") or []]
    checks = []
    for interface in physical:
        name, state, carrier = interface.get("name"), interface.get("operstate"), interface.get("carrier")
        if name in leave_out:
            checks.append(make_check(rule, host, "skip", "%s is in the rule's ignore_interfaces (%s): not judged" % (name, state)))
        elif state == "up" and carrier is True:
            checks.append(make_check(rule, host, "pass", "%s is up with a carrier (%s, MTU %s)" % (
                name, _speed(interface), interface.get("mtu")), threshold="up with a carrier"))
        else:
            checks.append(make_check(rule, host, "warn", "%s (%s, %s) is %s%s: check its cable and the switch port, or list it in "
                                     "ignore_interfaces if it is unused on purpose" % (
                                         name, interface.get("driver"), interface.get("pci_address"), state,
                                         " without a carrier" if carrier is not True else ""), threshold="up with a carrier"))
    return checks


def _speed(interface: Dict[str, Any]) -> str:
    speed = interface.get("speed_mbps")
    return "%g Gb/s" % (speed / 1000.0) if isinstance(speed, (int, float)) and not isinstance(speed, bool) and speed > 0 else "speed unknown"


def ethernet_mtu(host: str, data: Dict[str, Any], rule: Dict[str, Any], context: Any) -> List[Check]:
    """warn when the RDMA-backed NICs of the node do not share one MTU (RoCE and IPoIB traffic between rails)."""
    backed = [interface for interface in _physical(data) if isinstance(interface.get("rdma_device"), str)
              and isinstance(interface.get("mtu"), int)]
    if len(backed) < 2:
        return [make_check(rule, host, "skip", "%s RDMA-backed network interface: no MTU to compare" % ("one" if backed else "no"))]
    by_mtu: Dict[int, List[str]] = {}
    for interface in backed:
        by_mtu.setdefault(interface["mtu"], []).append(str(interface.get("name")))
    if len(by_mtu) > 1:
        return [make_check(rule, host, "warn", "the RDMA-backed interfaces have %d MTUs: %s; set one MTU on all of them" % (
            len(by_mtu), "; ".join("%s on %d" % (", ".join(names), mtu) for mtu, names in sorted(by_mtu.items()))),
            value=len(by_mtu), unit="MTUs", threshold="one MTU")]
    return [make_check(rule, host, "pass", "all %d RDMA-backed interfaces (%s) have MTU %d" % (
        len(backed), ", ".join(str(interface.get("name")) for interface in backed), backed[0]["mtu"]),
        value=backed[0]["mtu"], unit="B", threshold="one MTU")]


ETHERNET_CHECKS = {"ethernet_link": ethernet_link, "ethernet_mtu": ethernet_mtu}
