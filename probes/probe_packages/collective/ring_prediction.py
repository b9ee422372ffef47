"""What a ring all-reduce should move and take at 2, 4 and 8 ranks, stated from the plan and the topology before the
measurement, and how the measurement compared. Pure Python.

Ring model: every rank sends (and receives) 2(n-1)/n of the buffer, over one link to its ring neighbour; at large
messages the time is those bytes / the slowest ring link's per-direction rate, so busbw equals that rate.
"""
from __future__ import annotations

import re
from typing import Any, Dict, List, Mapping, Optional, Sequence

from probe_packages.collective.knee import describe_bytes
from probe_packages.collective.links import describe_link_class
from probe_packages.collective.stats import bus_factor, headline
from probelib.fields import is_unavailable, unavailable
from probelib.sweep import significant
from probelib.system.pcie_rate import link_raw_gbps

WORLD_SIZES = (2, 4, 8)
REFERENCE_WORLD_SIZE = 2
GAP_EXPLAINED_PCT = 15.0
# Sizes at the end of the plan's sweep that the smaller rings measure (the large-message plateau only).
RING_SIZES = 3
# GB/s per direction of one NVLink, by the version NVML reports (NVIDIA's figures: P100 NVLink 1 = 20, V100 NVLink 2,
# A100 NVLink 3 and H100/H200 NVLink 4 = 25, B200 NVLink 5 = 50). A version not listed gives no rate.
NVLINK_GBPS_PER_LINK = {"1.0": 20.0, "2.0": 25.0, "3.0": 25.0, "4.0": 25.0, "5.0": 50.0}
NVLINK_CLASS = re.compile(r"^NV([0-9]+)$")
STATED = ("stated before the measurement: computed from the plan and the topology before any all-reduce ran")
MODEL = ("ring all-reduce: each rank sends and receives 2(n-1)/n of the message, one link to its ring neighbour; "
         "assumes the large messages are bandwidth-bound (startup negligible), every ring link runs at the slowest "
         "ring link's per-direction rate, and NCCL uses a ring (not NVLS or a tree; NCCL_NVLS_ENABLE=0 for the "
         "smaller rings the probe starts); predicted time = per-rank bytes / link rate, predicted busbw = link rate; "
         "the ring visits the GPUs in index order, the n-rank ring uses GPUs 0..n-1")


def per_rank_bytes(world_size: int, message_bytes: int) -> float:
    """2(n-1)/n x S: what each rank sends in a ring all-reduce of S bytes."""
    return bus_factor(world_size) * message_bytes


def traffic_ratio(world_size: int, reference: int = REFERENCE_WORLD_SIZE) -> float:
    """Per-rank bytes at n ranks over those at ``reference`` ranks: 1.0, 1.5, 1.75 for 2, 4, 8 against 2."""
    return bus_factor(world_size) / bus_factor(reference)


def predicted_time_us(bytes_per_rank: float, rate_gbps: float) -> float:
    return bytes_per_rank / (rate_gbps * 1e9) * 1e6


def nvlink_rate(link_class: str, version: Any) -> Dict[str, Any]:
    """{gbps, how} of an NV<k> pair: k links x the version's per-link rate; gbps unavailable for an unknown version."""
    count = int(NVLINK_CLASS.match(link_class).group(1))
    if is_unavailable(version) or not isinstance(version, str):
        reason = version["unavailable"] if is_unavailable(version) else "not read"
        return {"gbps": unavailable("the NVLink version is unknown (%s)" % reason), "how": "%d NVLinks" % count}
    per_link = NVLINK_GBPS_PER_LINK.get(version)
    if per_link is None:
        return {"gbps": unavailable("no per-link rate is known for NVLink %s" % version), "how": "%d NVLink %s links" % (count, version)}
    return {"gbps": significant(count * per_link),
            "how": "%d NVLink %s links x %g GB/s = %g GB/s per direction" % (count, version, per_link, count * per_link)}


def pcie_rate(gpu_a: Mapping[str, Any], gpu_b: Mapping[str, Any]) -> Dict[str, Any]:
    """{gbps, how}: the slower of the two GPUs' PCIe links (max generation x width, after line coding)."""
    rates = []
    for gpu in (gpu_a, gpu_b):
        rate = link_raw_gbps(gpu.get("pcie_max_gen", unavailable("not read")), gpu.get("pcie_max_width", unavailable("not read")))
        if is_unavailable(rate):
            return {"gbps": rate, "how": "PCIe"}
        rates.append((rate, gpu))
    rate, gpu = min(rates, key=lambda item: item[0])
    return {"gbps": rate, "how": "PCIe gen %s x%s = %g GB/s per direction" % (gpu["pcie_max_gen"], gpu["pcie_max_width"], rate)}


def pair_rate(pair: Mapping[str, Any], gpus: Mapping[int, Mapping[str, Any]]) -> Dict[str, Any]:
    """{gpu_a, gpu_b, link_class, gbps, how} of one topology pair (torch indices), gbps unavailable when unknown."""
    link_class = pair.get("link_class")
    entry = {"gpu_a": pair["gpu_a"], "gpu_b": pair["gpu_b"], "link_class": link_class}
    if not isinstance(link_class, str):
        entry.update(gbps=unavailable("the link class is unknown"), how="unknown link")
        return entry
    gpu_a, gpu_b = gpus.get(pair["gpu_a"], {}), gpus.get(pair["gpu_b"], {})
    if NVLINK_CLASS.match(link_class):
        entry.update(nvlink_rate(link_class, gpu_a.get("nvlink_version", unavailable("not read"))))
    else:
        entry.update(pcie_rate(gpu_a, gpu_b))
    entry["how"] = "%s: %s" % (describe_link_class(link_class, pair.get("nvlink_via")), entry["how"])
    return entry


def ring_pairs(world_size: int) -> List[tuple]:
    """The neighbour pairs of the ring over GPUs 0..n-1 in index order, each (low, high), once."""
    pairs = {tuple(sorted((rank, (rank + 1) % world_size))) for rank in range(world_size)}
    return sorted(pairs)


def ring_link(world_size: int, topology: Any, gpus: Any) -> Dict[str, Any]:
    """{link_class, rate_gbps, how} of the slowest link of the n-rank ring; rate_gbps unavailable when any is unknown."""
    if is_unavailable(topology) or not isinstance(topology, dict):
        why = topology["unavailable"] if is_unavailable(topology) else "not read"
        return {"link_class": unavailable(why), "rate_gbps": unavailable("the topology is unknown: %s" % why)}
    if is_unavailable(gpus) or not isinstance(gpus, dict):
        why = gpus["unavailable"] if is_unavailable(gpus) else "not read"
        gpus = {}
    else:
        why = ""
    by_pair = {(pair["gpu_a"], pair["gpu_b"]): pair for pair in topology.get("pairs", [])}
    rates = []
    for ends in ring_pairs(world_size):
        if ends not in by_pair:
            return {"link_class": unavailable("the topology has no pair %d-%d" % ends),
                    "rate_gbps": unavailable("the topology has no pair %d-%d" % ends)}
        rates.append(pair_rate(by_pair[ends], gpus))
    unknown = [rate for rate in rates if is_unavailable(rate["gbps"])]
    if unknown:
        first = unknown[0]
        reason = "no rate for the %s link %d-%d: %s" % (first["link_class"], first["gpu_a"], first["gpu_b"], first["gbps"]["unavailable"])
        if why:
            reason += " (the GPUs' links were not read: %s)" % why
        return {"link_class": first["link_class"] if isinstance(first["link_class"], str) else unavailable("unknown"),
                "rate_gbps": unavailable(reason)}
    slowest = min(rates, key=lambda rate: rate["gbps"])
    return {"link_class": slowest["link_class"], "rate_gbps": slowest["gbps"],
            "how": "slowest ring link GPU %d-%d, %s" % (slowest["gpu_a"], slowest["gpu_b"], slowest["how"])}


def measurability(world_size: int, kind: str, available: int) -> Any:
    """True when this host can run an n-rank ring (GPUs, or the CPU ranks cpu_ranks allows), else why not."""
    if world_size <= available:
        return True
    if kind == "cpu":
        return unavailable("needs %d CPU ranks, cpu_ranks is %d" % (world_size, available))
    return unavailable("needs %d GPUs, this host has %d" % (world_size, available))


def predict_world(world_size: int, message_bytes: int, kind: str, available: int, topology: Any, gpus: Any) -> Dict[str, Any]:
    """One world size's prediction: traffic, and time and busbw where the ring's link rate is known."""
    sent = per_rank_bytes(world_size, message_bytes)
    entry: Dict[str, Any] = {
        "world_size": world_size, "bus_factor": significant(bus_factor(world_size)),
        "per_rank_bytes": int(round(sent)), "traffic_ratio_to_2": significant(traffic_ratio(world_size)),
        "measurable": measurability(world_size, kind, available),
    }
    link = _link_for(world_size, kind, available, topology, gpus)
    entry["link_class"] = link["link_class"]
    entry["link_rate_gbps"] = link["rate_gbps"]
    if is_unavailable(link["rate_gbps"]):
        why = unavailable("no time or busbw predicted, only the traffic: %s" % link["rate_gbps"]["unavailable"])
        entry["predicted_time_us"] = why
        entry["predicted_busbw_gbps"] = why
        return entry
    entry["link_how"] = link["how"]
    entry["predicted_time_us"] = significant(predicted_time_us(sent, link["rate_gbps"]))
    entry["predicted_busbw_gbps"] = link["rate_gbps"]
    return entry


def _link_for(world_size: int, kind: str, available: int, topology: Any, gpus: Any) -> Dict[str, Any]:
    if kind == "cpu":
        why = unavailable("CPU ranks over loopback and shared memory: no link rate to predict from")
        return {"link_class": why, "rate_gbps": why}
    if world_size > available:
        why = unavailable("the %d-rank ring would include GPUs this host does not show, whose links are unknown" % world_size)
        return {"link_class": why, "rate_gbps": why}
    return ring_link(world_size, topology, gpus)


def predict(message_bytes: int, kind: str, available: int, topology: Any, gpus: Any) -> Dict[str, Any]:
    """The prediction member: for n in 2, 4, 8 at the plan's largest message; ``available`` = GPUs or cpu_ranks."""
    return {"stated": STATED, "model": MODEL, "message_bytes": int(message_bytes),
            "world_sizes": [predict_world(size, message_bytes, kind, available, topology, gpus) for size in WORLD_SIZES]}


def sub_world_sizes(available: int) -> List[int]:
    """The world sizes measured by extra, smaller rings: those of 2, 4, 8 below the probe's own world size."""
    return [size for size in WORLD_SIZES if size < available]


def ring_sizes_bytes(sizes: Sequence[int], count: int = RING_SIZES) -> List[int]:
    return list(sizes[-count:])


def measured_point(curve: Optional[Mapping[str, Any]], message_bytes: int) -> Any:
    """{curve, time_us at the largest message, busbw_gbps (plateau, else the largest), busbw_source} or why none."""
    if not curve:
        return unavailable("not measured")
    if curve.get("error") and not curve.get("sweep"):
        return unavailable("the curve failed: %s" % curve["error"])
    at_size = [point for point in curve.get("sweep") or [] if point.get("size_bytes") == message_bytes]
    if not at_size or "busbw_at_largest_gbps" not in curve:
        return unavailable("the curve did not reach %s" % describe_bytes(message_bytes))
    top = headline(dict(curve))
    return {"curve": str(curve["name"]), "time_us": at_size[0]["time_us"], "busbw_gbps": top["gbps"],
            "busbw_source": top["source"]}


def percent_difference(measured: float, predicted: float) -> float:
    """(measured - predicted) / predicted in %, rounded to 0.1."""
    return round((measured - predicted) / predicted * 100.0, 1)


def compare(entry: Mapping[str, Any], measured: Any, reference: Any = None) -> Dict[str, Any]:
    """{world_size, measured, time_diff_pct, busbw_diff_pct, measured_time_ratio_to_2, sentence} for one world size."""
    result: Dict[str, Any] = {"world_size": entry["world_size"], "measured": measured}
    if is_unavailable(measured):
        result["sentence"] = "%d ranks: not measured here (%s)" % (entry["world_size"], measured["unavailable"])
        return result
    if entry["world_size"] != REFERENCE_WORLD_SIZE and isinstance(reference, dict) and reference.get("time_us"):
        result["measured_time_ratio_to_2"] = significant(measured["time_us"] / reference["time_us"])
    if is_unavailable(entry["predicted_busbw_gbps"]):
        result["sentence"] = traffic_sentence(entry, result.get("measured_time_ratio_to_2"))
        return result
    result["time_diff_pct"] = percent_difference(measured["time_us"], entry["predicted_time_us"])
    result["busbw_diff_pct"] = percent_difference(measured["busbw_gbps"], entry["predicted_busbw_gbps"])
    result["sentence"] = gap_sentence(entry, measured, result["busbw_diff_pct"])
    return result


def traffic_sentence(entry: Mapping[str, Any], time_ratio: Any) -> str:
    """Without a link rate only the traffic is predicted: compare the time's growth from 2 ranks with it."""
    words = "%d ranks: %s" % (entry["world_size"], entry["predicted_busbw_gbps"]["unavailable"])
    if time_ratio is None:
        return words
    return words + ("; the time at the largest message grew %.2f x from 2 ranks against the %.2f x more traffic per rank "
                    "the ring predicts" % (time_ratio, entry["traffic_ratio_to_2"]))


def gap_sentence(entry: Mapping[str, Any], measured: Mapping[str, Any], busbw_diff_pct: float) -> str:
    """One sentence on predicted against measured busbw, with the topology's reason where the gap passes 15 %."""
    n = entry["world_size"]
    head = "%d ranks: %s GB/s busbw measured against %s GB/s predicted (%+.1f %%)" % (
        n, measured["busbw_gbps"], entry["predicted_busbw_gbps"], busbw_diff_pct)
    if abs(busbw_diff_pct) <= GAP_EXPLAINED_PCT:
        return head + ", within %g %% of the ring model" % GAP_EXPLAINED_PCT
    return head + ": " + gap_reason(entry, measured, busbw_diff_pct)


def gap_reason(entry: Mapping[str, Any], measured: Mapping[str, Any], busbw_diff_pct: float) -> str:
    link_class = entry.get("link_class")
    if busbw_diff_pct > 0:
        return ("faster than a ring over %s allows, so NCCL did not run a plain ring (NVLS or a tree: check "
                "NCCL_NVLS_ENABLE and NCCL_ALGO)" % link_class)
    if measured.get("busbw_source") != "plateau":
        return "the curve has no plateau at the largest messages, so startup still counts (launch-bound)"
    if isinstance(link_class, str) and not NVLINK_CLASS.match(link_class):
        return "the %d-rank ring crosses a PCIe %s link (%s) whose packet overhead the raw rate leaves out" % (
            entry["world_size"], link_class, describe_link_class(link_class))
    return ("NCCL's ring does not reach NVLink's raw rate (%s): protocol and packet overhead and the channels it "
            "runs, which the model leaves out" % entry.get("link_how", link_class))


def comparisons(prediction: Mapping[str, Any], measured_by_size: Mapping[int, Any]) -> List[Dict[str, Any]]:
    """compare() for every predicted world size; ``measured_by_size`` maps n to measured_point()'s answer."""
    reference = measured_by_size.get(REFERENCE_WORLD_SIZE)
    found = []
    for entry in prediction["world_sizes"]:
        missing = entry["measurable"] if is_unavailable(entry["measurable"]) else unavailable("not measured")
        found.append(compare(entry, measured_by_size.get(entry["world_size"], missing), reference))
    return found
