# -*- coding: utf-8 -*-
# Copyright: gpufleet.validation contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Checks of each RDMA port: up, at the baseline's rate, and as many on the baseline's link layer as the board has.

A host without an RDMA device is a skip with that reason; the count is judged only on the SKU's whole board (a VM or
container slice of an 8-GPU board has the NICs it was given).
"""
from __future__ import annotations

from typing import Any, Dict, List

from ...probe_kit.kit import make_check, Check
from .ports import DISABLED_PHYS_STATE, expected, ignored, no_rdma_words, ports_of, whole_board


def port_state(host: str, data: Dict[str, Any], rule: Dict[str, Any], context: Any) -> List[Check]:
    """fail for each port not ACTIVE and LinkUp, naming it; a port disabled on purpose or listed in ignore_ports is a skip."""
    ports, why = ports_of(data)
    if not ports:
        return [make_check(rule, host, "skip", no_rdma_words(why))]
    leave_out = ignored(rule)
    checks = []
    for port in ports:
        state, phys = port.text("state") or str(port.port.get("state")), port.text("phys_state") or str(port.port.get("phys_state"))
        if port.key in leave_out:
            checks.append(make_check(rule, host, "skip", "%s is in the rule's ignore_ports (%s, %s): not judged" % (port.label, state, phys)))
        elif port.active:
            checks.append(make_check(rule, host, "pass", "%s is ACTIVE, LinkUp at %s" % (port.label, port.rate_words()),
                                     threshold="ACTIVE and LinkUp"))
        elif phys == DISABLED_PHYS_STATE:
            checks.append(make_check(rule, host, "skip", "%s is %s, physical state Disabled: turned off on purpose, not judged"
                                     % (port.label, state)))
        else:
            checks.append(make_check(rule, host, "fail", "%s is %s, physical state %s (not ACTIVE/LinkUp): no traffic crosses it; "
                                     "check the cable, the transceiver and the switch port, and that a subnet manager runs"
                                     % (port.label, state, phys), threshold="ACTIVE and LinkUp"))
    return checks


def port_rate(host: str, data: Dict[str, Any], rule: Dict[str, Any], context: Any) -> List[Check]:
    """fail for each active port of the baseline's link layer below the baseline's rate (half rate: a lane down, a cable)."""
    ports, why = ports_of(data)
    if not ports:
        return [make_check(rule, host, "skip", no_rdma_words(why))]
    rate, rate_source = expected(context, "rate_gbitps")
    if rate is None:
        return [make_check(rule, host, "skip", "%s; the port rates are recorded, not judged" % rate_source)]
    layer, unused_source = expected(context, "link_layer")
    leave_out = ignored(rule)
    checks = []
    for port in ports:
        if port.key in leave_out or not port.active:
            continue
        if layer is not None and port.text("link_layer") != layer:
            checks.append(make_check(rule, host, "skip", "%s is %s, not the %s compute fabric the baseline describes: its rate (%s) "
                                     "is not judged" % (port.label, port.port.get("link_layer"), layer, port.rate_words())))
            continue
        value = port.rate_gbitps
        if value is None:
            checks.append(make_check(rule, host, "error", "%s: its rate could not be read (%s)" % (port.label, port.rate_words())))
            continue
        status = "pass" if value >= float(rate) else "fail"
        words = "" if status == "pass" else ": it carries %.0f %% of what it should; reseat or replace the cable or transceiver, " \
            "and check the switch port's speed" % (100.0 * value / float(rate))
        checks.append(make_check(rule, host, status, "%s at %s, expected %g Gb/s%s" % (port.label, port.rate_words(), float(rate), words),
                                 value=value, unit="Gb/s", reference=float(rate), reference_source=rate_source,
                                 threshold=">= %g Gb/s" % float(rate)))
    if not checks:
        return [make_check(rule, host, "skip", "no active RDMA port to judge the rate of (port_state says why)")]
    return checks


def rdma_port_count(host: str, data: Dict[str, Any], rule: Dict[str, Any], context: Any) -> List[Check]:
    """fail when the SKU's whole board has fewer active ports on the baseline's link layer and rate than the baseline's
    rdma_ports_per_node; any other host is a skip with the reason."""
    count, count_source = expected(context, "rdma_ports_per_node")
    if count is None:
        return [make_check(rule, host, "skip", count_source)]
    board, board_words = whole_board(context)
    ports, why = ports_of(data)
    if not board:
        return [make_check(rule, host, "skip", "%s; %d RDMA port(s) here, not held to the board's %d" % (board_words, len(ports), count))]
    if why:
        return [make_check(rule, host, "error", "the RDMA devices could not be listed (%s)" % why)]
    layer, unused_layer_source = expected(context, "link_layer")
    rate, unused_rate_source = expected(context, "rate_gbitps")
    good, other = [], []
    for port in ports:
        problem = []
        if not port.active:
            problem.append("%s/%s" % (port.port.get("state"), port.port.get("phys_state")))
        if layer is not None and port.text("link_layer") != layer:
            problem.append("link layer %s, not %s (a VPI port in the other mode: mlxconfig LINK_TYPE_P1)" % (port.port.get("link_layer"), layer))
        if rate is not None and (port.rate_gbitps is None or port.rate_gbitps < float(rate)):
            problem.append(port.rate_words())
        if problem:
            other.append("%s (%s)" % (port.label, ", ".join(problem)))
        else:
            good.append(port.label)
    wanted = "active %s ports at >= %s Gb/s" % (layer or "RDMA", rate) if rate is not None else "active %s ports" % (layer or "RDMA")
    reason = "%d of %d %s (%s)" % (len(good), count, wanted, count_source)
    if other:
        reason += "; not counted: %s" % "; ".join(other)
    if not ports:
        reason += "; no RDMA device on this host although the board should have them: check that the HCAs are seated and " \
            "their driver (mlx5_core, ib_core) is loaded"
    return [make_check(rule, host, "pass" if len(good) >= int(count) else "fail", reason, value=len(good), unit="ports",
                       reference=int(count), reference_source=count_source, threshold=">= %d ports" % int(count))]


PORT_CHECKS = {"port_state": port_state, "port_rate": port_rate, "rdma_port_count": rdma_port_count}
