# -*- coding: utf-8 -*-
# Copyright: gpufleet.validation contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Checks of the ports' error counters: their rise since the host's previous run, per hour, is judged.

A counter since boot says how long the host has been up as much as how healthy the link is, so it is context (in each
reason), never judged alone. The rise between this run and the previous run of the same host (RuleContext.earlier_envelopes,
store/previous.py) over the time between their starts is: NVSentinel's NIC health monitor treats symbol_error above
120 an hour as fatal and any rise of link_downed as a link that went down. A counter lower than before was reset (a
reboot, a driver reload, perfquery -R): no rate.
"""
from __future__ import annotations

from typing import Any, Dict, List, Optional, Tuple

from ...probe_kit.kit import make_check, param_source, reads_params, Check, START_FIELDS, dig, start_interval
from .ports import Port, ignored, no_rdma_words, ports_of

# The largest value a 16-bit IB PortCounters counter holds (symbol_error, link_error_recovery, port_rcv_errors...): a
# counter there has stopped counting.
SATURATED_16BIT = 65535
PROBE = "fabric"


def _iso(envelope: Any, clock: str) -> str:
    text = dig(envelope, *dict(START_FIELDS)[clock])
    return text if isinstance(text, str) else "unknown"


def earlier_ports(context: Any) -> Tuple[Dict[str, Port], Optional[float], str]:
    """({"mlx5_0/1": port} of the host's previous fabric result, hours between the two runs' starts, why there is none)."""
    earlier = context.earlier_envelopes.get(PROBE)
    if not isinstance(earlier, dict) or not isinstance(earlier.get("data"), dict):
        return {}, None, "no earlier fabric result of this host to compare the counters with"
    run = earlier.get("run_id") or "the previous run"
    seconds, clock = start_interval(earlier, getattr(context, "envelope", None))
    if seconds is None:
        return {}, None, "the start of this run or of %s is not recorded, so no rate" % run
    hours = seconds / 3600.0
    if hours <= 0:
        return {}, None, "%s did not start before this run by the %s's clock (%s, %s), so no rate" % (
            run, clock, _iso(earlier, clock), _iso(getattr(context, "envelope", None), clock))
    ports, unused_why = ports_of(earlier["data"])
    return {port.key: port for port in ports}, hours, "since %s, %.3g h earlier" % (run, hours)


def _rise(port: Port, before: Optional[Port], name: str) -> Tuple[Optional[float], str]:
    """(the counter's rise since the earlier run, or None with why not)."""
    now = port.counter(name)
    if now is None:
        return None, "%s %s not read" % (port.label, name)
    if before is None:
        return None, "%s %s = %d since boot (the earlier run did not record this port)" % (port.label, name, now)
    then = before.counter(name)
    if then is None:
        return None, "%s %s = %d since boot (the earlier run did not read it)" % (port.label, name, now)
    if now < then:
        return None, "%s %s = %d, lower than the earlier run's %d: the counters were reset (a reboot, a driver reload or " \
            "perfquery -R), so no rate" % (port.label, name, now, then)
    return now - then, ""


def _since_boot_only(rule: Dict[str, Any], host: str, ports: List[Port], names: Tuple[str, ...], since: str) -> Check:
    """One skip for all ports when there is no earlier result: each port's since-boot counts, as context."""
    counts = []
    for port in ports:
        read = ["%s %d" % (name, port.counter(name)) for name in names if port.counter(name) is not None]
        counts.append("%s %s" % (port.label, ", ".join(read) or "not read"))
    return make_check(rule, host, "skip", "%s; since boot (context, not judged): %s" % (since, "; ".join(counts)))


@reads_params("max_per_hour")
def symbol_error_rate(host: str, data: Dict[str, Any], rule: Dict[str, Any], context: Any) -> List[Check]:
    """fail for each port whose symbol_error rose faster than params.max_per_hour since the host's previous run."""
    ports, why = ports_of(data)
    if not ports:
        return [make_check(rule, host, "skip", no_rdma_words(why))]
    ceiling = float(rule["params"]["max_per_hour"])
    before, hours, since = earlier_ports(context)
    leave_out = ignored(rule)
    if hours is None:
        return [_since_boot_only(rule, host, ports, ("symbol_error",), since)]
    checks = []
    for port in ports:
        if port.key in leave_out:
            continue
        now = port.counter("symbol_error")
        rise, why_not = _rise(port, before.get(port.key), "symbol_error")
        if rise is None:
            checks.append(make_check(rule, host, "skip", why_not))
            continue
        if now is not None and now >= SATURATED_16BIT and rise == 0:
            checks.append(make_check(rule, host, "warn", "%s symbol_error is stuck at %d (the 16-bit counter is saturated), so its "
                                     "rate cannot be read: clear the port's counters (perfquery -R) and run again" % (port.label, now)))
            continue
        rate = rise / hours
        status = "fail" if rate > ceiling else "pass"
        words = "" if status == "pass" else ": the link's bit error rate is beyond what InfiniBand allows; replace the cable or " \
            "transceiver, then clean or reseat the connectors"
        checks.append(make_check(rule, host, status, "%s symbol_error rose by %d %s: %.3g an hour (%d since boot)%s" % (
            port.label, rise, since, rate, now, words), value=round(rate, 3), unit="errors/h", reference=ceiling,
            reference_source=param_source(rule, "max_per_hour"), threshold="<= %g an hour" % ceiling))
    return checks


def link_downed_rising(host: str, data: Dict[str, Any], rule: Dict[str, Any], context: Any) -> List[Check]:
    """warn for each port whose link_downed rose since the host's previous run: the link went down and came back."""
    return _counters_rising(host, data, rule, context, ("link_downed",), "the link went down and retrained in between: look for "
                            "flaps in the kernel log and at the switch port; reseat or replace the cable if it repeats")


@reads_params("counters")
def counters_rising(host: str, data: Dict[str, Any], rule: Dict[str, Any], context: Any) -> List[Check]:
    """warn for each port where one of params.counters rose since the host's previous run."""
    names = tuple(str(name) for name in rule["params"]["counters"])
    return _counters_rising(host, data, rule, context, names, "errors on the link or drops at the receiver: check the cable "
                            "and the switch port; if they keep rising, take the node out of training jobs")


def _counters_rising(host: str, data: Dict[str, Any], rule: Dict[str, Any], context: Any, names: Tuple[str, ...],
                     meaning: str) -> List[Check]:
    ports, why = ports_of(data)
    if not ports:
        return [make_check(rule, host, "skip", no_rdma_words(why))]
    before, hours, since = earlier_ports(context)
    leave_out = ignored(rule)
    if hours is None:
        return [_since_boot_only(rule, host, ports, names, since)]
    checks = []
    for port in ports:
        if port.key in leave_out:
            continue
        boot = ", ".join("%s %d" % (name, port.counter(name)) for name in names if port.counter(name) is not None) or "none read"
        rose, unknown = [], []
        for name in names:
            rise, why_not = _rise(port, before.get(port.key), name)
            if rise is None:
                unknown.append(why_not)
            elif rise > 0:
                rose.append("%s +%d (%.3g an hour)" % (name, rise, rise / hours))
        if rose:
            checks.append(make_check(rule, host, "warn", "%s %s: %s; %s" % (port.label, since, ", ".join(rose), meaning),
                                     value=len(rose), unit="counters", threshold="no rise between runs"))
        elif unknown and len(unknown) == len(names):
            checks.append(make_check(rule, host, "skip", unknown[0]))
        else:
            checks.append(make_check(rule, host, "pass", "%s: %s did not rise %s (since boot: %s)" % (
                port.label, ", ".join(names), since, boot), value=0, unit="counters", threshold="no rise between runs"))
    return checks


COUNTER_CHECKS = {"symbol_error_rate": symbol_error_rate, "link_downed_rising": link_downed_rising, "counters_rising": counters_rising}
