"""collective_hosts probe: one all-reduce across the hosts of a group, started on every host at once."""
from __future__ import annotations

import os
import sys
from typing import Any, Dict

from probe_packages.collective.availability import backend_missing
from probe_packages.collective.curve import CurveRequest, run_curve
from probe_packages.collective.environment import debug_settings, socket_settings
from probe_packages.collective.explain import explain_hosts
from probe_packages.collective.interface import choose_interface
from probe_packages.collective.links import gpu_links
from probe_packages.collective.outcome import envelope_environment, environment_nccl, outcome_of, public_devices, software
from probe_packages.collective.plan import MAX_WORLD_SIZE, check_common, message_sizes, plan_record, worker_plan
from probelib.fields import read_field, unavailable
from probelib.params import require
from probelib.runner import ParameterError, ProbeResult, main

DESCRIPTION = (
    "All-reduce (sum, float32, in place) across the hosts of a group over message sizes from 8 B up in x2 steps: "
    "a playbook starts this probe on every host at once, each with its own node_rank; each host starts "
    "ranks_per_host worker processes (global rank = node_rank x ranks_per_host + local rank) and they meet at "
    "master_addr:master_port, where rank 0 (on the node_rank 0 host) serves a TCPStore. NCCL on GPU hosts (one rank "
    "per GPU), gloo on CPU hosts (kind cpu: it tests the pipeline across the hosts, not a GPU interconnect). Time per "
    "all-reduce = the slowest rank's average over back-to-back calls, so every host reports the same curve; algbw = "
    "bytes / time / 1e9, busbw = algbw x 2(n-1)/n; every size's result is checked against the expected sum. A host "
    "that never joins makes every host's result an error naming how many ranks joined."
)
METHOD = {
    "bandwidth": "algbw = message bytes / time per all-reduce / 1e9 (GB = 1e9 bytes); busbw = algbw x 2(n-1)/n for n ranks "
                 "in all (nccl-tests)",
    "timing": "per size: warm-up calls, 2 calibration calls, then the timed back-to-back all_reduce calls between CUDA events "
              "(perf_counter on CPU hosts) after a one-element all-reduce lines the ranks up; the time is the largest of "
              "all ranks' averages (all_reduce MAX), so every host reports the same curve",
    "data": "every rank fills the buffer with (rank + 1) x (i mod 7 + 1), all-reduces it once and compares every element "
            "exactly with n(n+1)/2 x (i mod 7 + 1); verified means every rank on every host matched (all_reduce MIN)",
    "rendezvous": "rank 0 serves a TCPStore at master_addr:master_port; every rank registers itself and its plan there and "
                  "the sweep starts only when all nnodes x ranks_per_host ranks have joined with the same plan within "
                  "rendezvous_timeout_s",
    "plateau": "sweep.find_plateau over busbw: at least 3 consecutive sizes within 5 % of their median, among sizes >= "
               "the largest / 64",
    "knee": "model t(s) = startup + s / plateau_algbw; the knee is where the transfer time equals the startup time",
    "transports": "with NCCL the transports are read from the local rank 0's NCCL INFO 'Channel ... via ...' lines",
}
HINT = "is every host of the group running? forks in ansible.cfg must be >= the group size"


def check_params(params: Dict[str, Any]) -> None:
    """What the spec (params.json) cannot say: the group's required values and checks across parameters, all named."""
    check_common(params)
    nnodes, problems = params["nnodes"], []
    if nnodes < 1:
        problems.append("nnodes is required: the number of hosts in the group (>= 1), not %r" % nnodes)
    elif params["node_rank"] >= nnodes:
        problems.append("node_rank must be a whole number from 0 to nnodes - 1 = %d, not %r" % (nnodes - 1, params["node_rank"]))
    if not params["master_addr"]:
        problems.append("master_addr is required: the address of the node_rank 0 host, reachable from every host")
    require(not problems, "; ".join(problems))


def collect(params: Dict[str, Any]) -> ProbeResult:
    import torch  # pylint: disable=import-outside-toplevel
    from probelib.measure.devices import cuda_device_count, measured_devices, refuse_hidden_gpus  # pylint: disable=import-outside-toplevel

    check_params(params)
    environment = envelope_environment(torch)
    if params["backend"] != "gloo":
        refuse_hidden_gpus(torch)
    gpus = cuda_device_count(torch)
    backend = params["backend"] if params["backend"] != "auto" else ("nccl" if gpus else "gloo")
    kind = "cuda" if backend == "nccl" else "cpu"
    ranks_per_host = int(params["ranks_per_host"]) or (gpus if kind == "cuda" else 1)
    if kind == "cuda" and ranks_per_host > gpus:
        raise ParameterError("ranks_per_host is %d but torch sees %d GPU(s) here" % (ranks_per_host, gpus))
    nnodes, node_rank = int(params["nnodes"]), int(params["node_rank"])
    world_size = nnodes * max(ranks_per_host, 1)
    if world_size > MAX_WORLD_SIZE:
        raise ParameterError("nnodes x ranks_per_host = %d ranks; at most %d are supported" % (world_size, MAX_WORLD_SIZE))
    sizes = message_sizes(int(params["max_bytes"] if kind == "cuda" else params["cpu_max_bytes"]))
    interface, source = choose_interface(os.environ, backend, params["socket_ifname"], params["master_addr"],
                                         int(params["master_port"]))
    settings = dict(debug_settings(os.environ, backend))
    settings.update(socket_settings(os.environ, backend, interface if isinstance(interface, str) else None))
    devices = measured_devices(torch, "cuda")[:ranks_per_host] if kind == "cuda" else []
    data: Dict[str, Any] = {
        "method": METHOD, "plan": _plan(backend, kind, world_size, sizes, params, settings),
        "devices": public_devices(devices), "software": software(torch, backend), "environment_nccl": environment_nccl(),
        "topology": unavailable("not read"), "curves": [], "explanation": unavailable("nothing was measured"), "errors": [],
        "hosts": {"node_rank": node_rank, "nnodes": nnodes, "master_addr": params["master_addr"],
                  "master_port": int(params["master_port"]), "interface": interface, "interface_source": source,
                  "ranks_per_host": ranks_per_host},
    }
    missing = _missing(torch, kind, backend, gpus, world_size)
    if missing:
        data["topology"] = unavailable(missing)
        data["explanation"] = unavailable(missing)
        return ProbeResult("unavailable", data, missing, environment)
    if kind == "cuda" and len(devices) >= 2:
        data["topology"] = read_field(lambda: gpu_links(devices), "the GPUs' link classes")
    else:
        data["topology"] = unavailable("fewer than 2 GPUs on this host: the all-reduce crosses only the network"
                                       if kind == "cuda" else "no GPU: the ranks are CPU processes")
    request = CurveRequest(
        name="default", plan=worker_plan(backend, kind, world_size, sizes, params),
        ranks=[(node_rank * ranks_per_host + local, local) for local in range(ranks_per_host)],
        master_addr=params["master_addr"], master_port=int(params["master_port"]),
        rendezvous_timeout_s=float(params["rendezvous_timeout_s"]), curve_timeout_s=float(params["curve_timeout_s"]),
        settings=settings, node_rank=node_rank, ranks_per_host=ranks_per_host, hint=HINT)
    curve, errors, unused_results = run_curve(request, os.environ)
    data["curves"].append(curve)
    data["errors"].extend(errors)
    data["explanation"] = explain_hosts(kind, data["hosts"], world_size, data["curves"])
    status, reason = outcome_of(data["curves"], data["errors"])
    return ProbeResult(status, data, reason, environment)


def _plan(backend: str, kind: str, world_size: int, sizes: list, params: Dict[str, Any], settings: Dict[str, str]) -> Dict[str, Any]:
    note = ("%s across %d host(s), %d rank(s) in all; messages %d B to %d B in x2 steps"
            % ("NCCL, one rank per GPU," if kind == "cuda" else "gloo with CPU ranks (kind cpu: the pipeline, not a GPU "
               "interconnect),", int(params["nnodes"]), world_size, sizes[0], sizes[-1]))
    return plan_record(backend, kind, world_size, sizes, params, settings, note)


def _missing(torch: Any, kind: str, backend: str, gpus: int, world_size: int) -> str:
    if kind == "cuda" and gpus == 0:
        return "backend is nccl but torch sees no CUDA GPU on this host"
    if world_size < 2:
        return "nnodes x ranks_per_host = %d: an all-reduce needs at least 2 ranks" % world_size
    return backend_missing(torch, backend)


if __name__ == "__main__":
    sys.exit(main("collective_hosts", DESCRIPTION, collect, requires=("torch",), measures_gpus=True))
