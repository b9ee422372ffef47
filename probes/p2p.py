"""p2p probe: GPU-to-GPU copy bandwidth and latency over every ordered pair, with the link that joins each pair."""
from __future__ import annotations

import sys
from typing import Any, Dict, List

from probe_packages.p2p.links import classify
from probe_packages.p2p.matrix import assemble_matrix, run_outcome
from probe_packages.p2p.pair_run import run_pair
from probe_packages.p2p.pairs import nvml_indices, ordered_pairs, topology_pair
from probe_packages.p2p.plan import make_plan
from probe_packages.p2p.timing import Spin
from probelib.fields import unavailable
from probelib.runner import ProbeResult, main

DESCRIPTION = (
    "Measure peer-to-peer (GPU-to-GPU) copies over every ordered pair (src, dst) of the visible GPUs, N x (N - 1): "
    "one-way bandwidth over a sweep of sizes, two-way bandwidth (both directions at once, summed as nvbandwidth does), "
    "and the GPU time per small copy. dst.copy_(src) runs on the copy engine (cudaMemcpyAsync on the source GPU's "
    "stream, peer access enabled); a spin kernel holds the stream while the copies are queued, so the host's queueing "
    "stays out of the timing; CUDA events time many back-to-back copies after a warm-up; median of repeats; the "
    "destination is compared with the source after the copies at every size. Each pair is classed by the link that "
    "joins it (NV<n> over NVLink, direct or through NVSwitch; else the PCIe path PIX/PXB/PHB/NODE/SYS and the NUMA "
    "nodes), read by the health probe's topology code and matched to torch's GPUs by UUID. A pair without peer access, "
    "or whose copies fail, is recorded as an error and the other pairs still run. Fewer than 2 GPUs: unavailable."
)


def method_of(spin: Spin) -> Dict[str, str]:
    if spin.available:
        timing = ("torch.cuda._sleep queues a spin kernel on the timed stream first, long enough (calibrated in GPU clock "
                  "cycles per second, 4 x the longest enqueue seen, at least 5 ms) to cover the host's queueing of every copy; then "
                  "the start event, the copies back to back, the end event; an event right after the spin is queried once "
                  "all copies are queued: still running means the queueing cost stayed out of the timing "
                  "(spin_covered_enqueue); a batch the spin did not cover is timed again once behind a longer, recalibrated spin")
    else:
        timing = ("this torch has no torch.cuda._sleep: nothing holds the stream, so the time between the events includes "
                  "the host's queueing of the copies wherever it is slower than the copies (spin_covered_enqueue false)")
    return {
        "pairs": "every ordered pair (src, dst) of the visible GPUs, N x (N - 1), by torch index; torch's GPUs are matched "
                 "to NVML's by UUID, and the link class comes from the health probe's topology code "
                 "(probelib.nvml.topology: NVML, else nvidia-smi topo -m)",
        "copy": "dst.copy_(src) of uint8 buffers on two GPUs: torch issues cudaMemcpyAsync on the source GPU's current "
                "stream (a copy engine), with peer access enabled; each direction sets its own stream on both GPUs",
        "bandwidth": "GB/s = bytes copied / time per copy / 1e9 (GB = 1e9 bytes), each byte counted once; bidirectional "
                     "runs src->dst and dst->src at once, each timed by CUDA events on its own source GPU, started "
                     "together, and adds the two directions' GB/s (as nvbandwidth)",
        "timing": timing,
        "repeats": "warmup copies before each size, then repeats timings of iterations copies; a point's time is the "
                   "median over the repeats",
        "plateau": "probelib.sweep.find_plateau over the sweep's GB/s: the longest run of consecutive sizes within 3 % of "
                   "their median (at least 2), searched from the largest size down; headline_gbps is that median, else "
                   "the largest size's value (headline_source says which)",
        "latency": "copy-engine per-transfer time: latency_copies copies of latency_size_bytes queued back to back behind "
                   "the spin, their GPU time / latency_copies, median of repeats; it includes torch's cross-GPU stream "
                   "barrier per copy, and is not nvbandwidth's pointer-chase load latency",
        "data": "sources hold random bytes 1..255, destinations are zeroed before each size; after the timed copies the "
                "whole destination is compared with the source on the destination GPU (verified)",
        "peer_access": "torch.cuda.can_device_access_peer(src, dst) false: the pair is an error and not measured (a copy "
                       "would be staged through host memory), the other pairs still run",
    }


def device_entries(devices: List[Dict[str, Any]], nvml_index: List[Any]) -> List[Dict[str, Any]]:
    return [{"index": device["index"], "uuid": device["uuid"], "name": device["name"], "nvml_index": index}
            for device, index in zip(devices, nvml_index)]


def pair_identity(devices: List[Dict[str, Any]], nvml_index: List[Any], topology: Any, src: int, dst: int) -> Dict[str, Any]:
    """The pair's entry before measuring: who, and the link between them (from the topology, in src/dst order)."""
    entry, src_is_a = topology_pair(topology, nvml_index[src], nvml_index[dst])
    identity: Dict[str, Any] = {"src": src, "dst": dst, "src_uuid": devices[src]["uuid"], "dst_uuid": devices[dst]["uuid"]}
    identity.update(classify(entry, src_is_a))
    return identity


def _read_topology() -> Dict[str, Any]:
    from probe_packages.p2p.topology import read_topology  # pylint: disable=import-outside-toplevel
    return read_topology()


def collect(params: Dict[str, Any]) -> ProbeResult:
    import torch  # pylint: disable=import-outside-toplevel
    from probe_packages.p2p.topology import summarize  # pylint: disable=import-outside-toplevel
    from probelib.measure.devices import measured_devices  # pylint: disable=import-outside-toplevel
    from probelib.measure.opening import torch_environment  # pylint: disable=import-outside-toplevel

    spin = Spin(torch)
    environment = torch_environment(torch)
    devices = measured_devices(torch, "cuda")
    if len(devices) < 2:
        not_read = unavailable("not read: fewer than 2 GPUs, nothing to measure")
        data = {"method": method_of(spin), "plan": make_plan(params, spin.describe()), "topology": not_read,
                "devices": device_entries(devices, [not_read] * len(devices)), "pairs": [],
                "matrix": assemble_matrix(len(devices), []), "errors": []}
        return ProbeResult("unavailable", data, "%d GPU(s) visible: no pair to measure" % len(devices), environment)
    read = _read_topology()
    topology = read["topology"]
    nvml_index = nvml_indices([device["uuid"] for device in devices], read["nvml_uuids"])
    plan = make_plan(params, spin.describe(), [torch.cuda.mem_get_info(device["index"])[0] for device in devices])
    pairs, errors = [], []
    for src, dst in ordered_pairs(len(devices)):
        entry, pair_errors = run_pair(torch, spin, src, dst, plan, pair_identity(devices, nvml_index, topology, src, dst))
        pairs.append(entry)
        errors.extend(pair_errors)
    data = {"method": method_of(spin), "plan": plan, "topology": summarize(topology),
            "devices": device_entries(devices, nvml_index), "pairs": pairs,
            "matrix": assemble_matrix(len(devices), pairs), "errors": errors}
    status, reason = run_outcome(pairs, errors)
    return ProbeResult(status, data, reason, environment)


if __name__ == "__main__":
    sys.exit(main("p2p", DESCRIPTION, collect, requires=("torch",), measures_gpus=True))
