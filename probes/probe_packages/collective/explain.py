"""One sentence that says what the all-reduce curves show. Pure Python."""
from __future__ import annotations

from typing import Any, List, Mapping, Optional

from probe_packages.collective.knee import describe_bytes
from probe_packages.collective.links import describe_link_class
from probe_packages.collective.stats import headline
from probelib.fields import is_unavailable, unavailable

SAME_RATIO_BAND = 1.1


def gbps_words(value: float) -> str:
    return ("%.1f" % value) if value >= 10 else ("%.3g" % value)


def headline_words(curve: Mapping[str, Any]) -> str:
    """'366.1 GB/s busbw (plateau at 256 MiB-1 GiB)' or '... at the largest message, 64 MiB (no plateau)'."""
    top = headline(dict(curve))
    if top["source"] == "plateau":
        sizes = top["sizes_bytes"]
        return "%s GB/s busbw (plateau at %s-%s)" % (gbps_words(top["gbps"]), describe_bytes(sizes[0]), describe_bytes(sizes[-1]))
    return "%s GB/s busbw at the largest message, %s (no plateau)" % (gbps_words(top["gbps"]), describe_bytes(top["sizes_bytes"][0]))


def _measured(curve: Optional[Mapping[str, Any]]) -> bool:
    return bool(curve) and bool(curve.get("sweep")) and "busbw_at_largest_gbps" in curve


def _transport_words(curve: Mapping[str, Any]) -> str:
    names = curve.get("transports")
    if isinstance(names, list) and names:
        return ", ".join(names)
    return "transport not reported"


def _link_words(topology: Any) -> str:
    if is_unavailable(topology) or not isinstance(topology, dict) or not topology.get("link_classes"):
        return "links of unknown class"
    described = []
    for link_class in topology["link_classes"]:
        via = next((pair.get("nvlink_via") for pair in topology.get("pairs", []) if pair.get("link_class") == link_class), None)
        described.append(describe_link_class(link_class, via))
    return " and ".join(described)


def _fallback_words(curve: Mapping[str, Any]) -> str:
    names = curve.get("transports") if isinstance(curve.get("transports"), list) else []
    if any(name.startswith("SHM") for name in names):
        return "falls back to shared host memory (SHM) at %s, bounded by the GPUs' PCIe links" % headline_words(curve)
    network = [name for name in names if name.startswith("NET")]
    if network:
        return "falls back to the network (%s) at %s" % (", ".join(network), headline_words(curve))
    return "uses %s at %s" % (_transport_words(curve), headline_words(curve))


def explain_local(kind: str, world_size: int, curves: List[Mapping[str, Any]], topology: Any,
                  environment: Mapping[str, str], p2p_sweep_requested: bool) -> Any:
    """The sentence of the collective probe (one host), or unavailable when the default curve has no measurement."""
    by_name = {curve["name"]: curve for curve in curves}
    default = by_name.get("default")
    if not _measured(default):
        why = default.get("error") if default else "it did not run"
        return unavailable("the default curve has no measurement: %s" % why)
    if kind == "cpu":
        return ("gloo over loopback with %d CPU ranks reaches %s; this tests the probe's pipeline (workers, rendezvous, "
                "timing, data check), not a GPU interconnect" % (world_size, headline_words(default)))
    sentence = "with P2P NCCL moves data over %s (%s) at %s" % (
        _link_words(topology), _transport_words(default), headline_words(default))
    if "NCCL_P2P_DISABLE" in environment:
        sentence += " (NCCL_P2P_DISABLE=%s was set by the user for the default curve too)" % environment["NCCL_P2P_DISABLE"]
    disabled = by_name.get("p2p_disabled")
    if disabled is None:
        reason = "p2p_disabled_sweep is false" if not p2p_sweep_requested else "it did not run"
        return sentence + "; the NCCL_P2P_DISABLE=1 comparison was not made (%s)" % reason
    if not _measured(disabled):
        return sentence + "; the NCCL_P2P_DISABLE=1 comparison failed: %s" % disabled.get("error", "no measurement")
    sentence += "; with NCCL_P2P_DISABLE=1 it %s" % _fallback_words(disabled)
    with_p2p, without = headline(dict(default))["gbps"], headline(dict(disabled))["gbps"]
    if not without or not with_p2p:
        return sentence
    ratio = with_p2p / without
    if ratio >= SAME_RATIO_BAND:
        return sentence + ": %.1f x slower" % ratio
    if ratio <= 1 / SAME_RATIO_BAND:
        return sentence + (": %.1f x faster than with P2P, so P2P does not help here (check NCCL_P2P_LEVEL, the "
                           "containers' IPC namespace, the fabric manager)" % (1 / ratio))
    return sentence + (": about the same, so P2P makes no difference here (as when P2P goes through the CPU's PCIe host "
                       "bridge or is already disabled)")


def explain_hosts(kind: str, hosts: Mapping[str, Any], world_size: int, curves: List[Mapping[str, Any]]) -> Any:
    """The sentence of the collective_hosts probe."""
    default = next((curve for curve in curves if curve.get("name") == "default"), None)
    if not _measured(default):
        why = default.get("error") if default else "it did not run"
        return unavailable("the cross-host curve has no measurement: %s" % why)
    interface = hosts.get("interface")
    where = ("interface %s" % interface) if isinstance(interface, str) else "an interface the library chose"
    span = "%d host(s), %d rank(s) each, %d in all" % (hosts["nnodes"], hosts["ranks_per_host"], world_size)
    if kind == "cpu":
        return ("gloo across %s over %s reaches %s; CPU ranks test the pipeline across the hosts (rendezvous, network, "
                "timing, data check), not a GPU interconnect" % (span, where, headline_words(default)))
    return "NCCL across %s (%s; sockets over %s) reaches %s" % (span, _transport_words(default), where, headline_words(default))
