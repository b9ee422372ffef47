"""collective probe: all-reduce bandwidth within one host over a message-size sweep, with and without NCCL P2P."""
from __future__ import annotations

import os
import sys
from typing import Any, Dict, List

from probe_packages.collective import ring_prediction
from probe_packages.collective.availability import backend_missing
from probe_packages.collective.curve import CurveRequest, free_port, run_curve
from probe_packages.collective.environment import debug_settings, socket_settings
from probe_packages.collective.explain import explain_local
from probe_packages.collective.interface import choose_interface
from probe_packages.collective.links import gpu_link_rates, gpu_links
from probe_packages.collective.outcome import envelope_environment, environment_nccl, outcome_of, public_devices, software
from probe_packages.collective.plan import check_common, message_sizes, plan_record, worker_plan
from probelib.fields import read_field, unavailable
from probelib.runner import ProbeResult, main

DESCRIPTION = (
    "All-reduce (sum, float32, in place) within this host over message sizes from 8 B up in x2 steps, one worker "
    "process per rank started by the probe: with GPUs NCCL with one rank per GPU, and a second sweep in fresh workers "
    "with NCCL_P2P_DISABLE=1 to compare NVLink/PCIe P2P with NCCL's fallback (shared host memory); without a GPU gloo "
    "with cpu_ranks CPU ranks over loopback (kind cpu: it tests the pipeline, not a GPU interconnect); exactly one GPU "
    "is unavailable (an all-reduce needs two ranks). Time per all-reduce = the slowest rank's average over back-to-back "
    "calls (CUDA events, perf_counter on the CPU); algbw = bytes / time / 1e9, busbw = algbw x 2(n-1)/n (nccl-tests); "
    "every size's result is checked against the expected sum. Also records the plateau and the knee of each curve, "
    "the transports NCCL chose (from its INFO lines; NCCL_DEBUG=INFO and NCCL_DEBUG_SUBSYS=INIT are set for the workers "
    "unless NCCL_DEBUG is set), the link classes between the GPUs (NVML) and the allow-listed NCCL_*, TORCH_NCCL_*, "
    "GLOO_* and CUDA_VISIBLE_DEVICES/CUDA_DEVICE_MAX_CONNECTIONS/CUDA_DEVICE_ORDER variables."
)
METHOD = {
    "bandwidth": "algbw = message bytes / time per all-reduce / 1e9 (GB = 1e9 bytes); busbw = algbw x 2(n-1)/n for n ranks, "
                 "the bytes each rank's links carry in a ring all-reduce (nccl-tests), comparable across rank counts",
    "timing": "per size: warm-up calls, 2 calibration calls, then the timed back-to-back all_reduce calls between CUDA events "
              "on the current stream (perf_counter on the CPU path) after a one-element all-reduce lines the ranks up; "
              "the time per all-reduce is the largest of the ranks' averages (all_reduce MAX), so every rank reports the "
              "same; small messages measure launch and synchronisation cost, not the links",
    "data": "after the timing every rank fills the buffer with (rank + 1) x (i mod 7 + 1), all-reduces it once and compares "
            "every element exactly with n(n+1)/2 x (i mod 7 + 1); verified means every rank matched (all_reduce MIN)",
    "plateau": "sweep.find_plateau over busbw: the longest run of at least 3 consecutive sizes within 5 % of the run's median, "
               "among sizes >= the largest / 64; the headline is the plateau, else the largest size",
    "knee": "model t(s) = startup + s / plateau_algbw: startup is the median time of the 4 smallest sizes, the knee the size "
            "where the transfer time equals the startup time (algbw half the plateau)",
    "comparison": "with GPUs the sweep runs again in fresh workers with NCCL_P2P_DISABLE=1, so NCCL cannot use NVLink or "
                  "PCIe peer-to-peer and falls back to shared host memory (SHM): the gap is what P2P is worth",
    "transports": "the transports NCCL chose are read from rank 0's NCCL INFO 'Channel ... via ...' lines",
    "prediction": "stated before the measurement, for 2, 4 and 8 ranks at the largest message S: per-rank bytes "
                  "2(n-1)/n x S, the ratio to 2 ranks, and where the ring's slowest link has a known rate (NVLink count "
                  "x the version's per-link rate, or PCIe max generation x width, from NVML) time = bytes / rate and "
                  "busbw = rate; a world size this host cannot run is marked unavailable, never simulated",
    "ring_curves": "the world sizes 2 and 4 below the probe's own one are measured by extra rings over GPUs 0..n-1 "
                   "(CPU ranks on the CPU path) at the sweep's last %d sizes only, with NCCL_NVLS_ENABLE=0 unless set; "
                   "the probe's own world size is the default curve" % ring_prediction.RING_SIZES,
}
P2P_DISABLED_ENV = {"NCCL_P2P_DISABLE": "1"}
RING_ENV = {"NCCL_NVLS_ENABLE": "0"}
ONE_GPU_REASON = "1 GPU visible: an all-reduce needs at least 2 ranks"


def make_plan(backend: str, kind: str, world_size: int, sizes: List[int], params: Dict[str, Any],
              settings: Dict[str, str]) -> Dict[str, Any]:
    if kind == "cuda":
        note = ("NCCL with one rank per GPU (%d ranks), messages %d B to %d B in x2 steps%s"
                % (world_size, sizes[0], sizes[-1], "; then the same sweep in fresh workers with NCCL_P2P_DISABLE=1"
                   if params["p2p_disabled_sweep"] else "; the NCCL_P2P_DISABLE=1 sweep is turned off"))
    else:
        note = ("no GPU: gloo with %d CPU ranks over loopback (kind cpu) tests the probe's pipeline (workers, rendezvous, "
                "timing, data check), not a GPU interconnect; messages stop at cpu_max_bytes (%d B) because all-reducing "
                "larger ones on CPUs only lengthens the run" % (world_size, sizes[-1]))
    return plan_record(backend, kind, world_size, sizes, params, settings, note)


def collect(params: Dict[str, Any]) -> ProbeResult:
    import torch  # pylint: disable=import-outside-toplevel
    from probelib.measure.devices import measured_devices  # pylint: disable=import-outside-toplevel

    check_common(params)
    environment = envelope_environment(torch)
    devices = measured_devices(torch, params["device"])
    kind = devices[0]["kind"] if devices else "cuda"
    backend = "nccl" if kind == "cuda" else "gloo"
    world_size = len(devices) if kind == "cuda" else int(params["cpu_ranks"])
    sizes = message_sizes(int(params["max_bytes"] if kind == "cuda" else params["cpu_max_bytes"]))
    settings = dict(debug_settings(os.environ, backend))
    if backend == "gloo":
        interface, unused_source = choose_interface(os.environ, backend, "", "127.0.0.1", 0)
        settings.update(socket_settings(os.environ, backend, interface if isinstance(interface, str) else None))
    data: Dict[str, Any] = {
        "method": METHOD, "plan": make_plan(backend, kind, world_size, sizes, params, settings),
        "devices": public_devices(devices), "software": software(torch, backend), "environment_nccl": environment_nccl(),
        "topology": unavailable("not read"), "curves": [], "explanation": unavailable("nothing was measured"), "errors": [],
    }
    available = len(devices) if kind == "cuda" else world_size
    missing = _missing(torch, devices, kind, backend)
    if missing:
        data["topology"] = unavailable(missing)
        data["explanation"] = unavailable(missing)
        data["prediction"] = ring_prediction.predict(sizes[-1], kind, available, data["topology"], unavailable(missing))
        return ProbeResult("unavailable", data, missing, environment)
    if kind == "cuda":
        data["topology"] = read_field(lambda: gpu_links(devices), "the GPUs' link classes")
        gpus = read_field(lambda: gpu_link_rates(devices), "the GPUs' NVLink versions and PCIe links")
    else:
        data["topology"] = unavailable("no GPU: the ranks are CPU processes on this host")
        gpus = data["topology"]
    data["prediction"] = ring_prediction.predict(sizes[-1], kind, available, data["topology"], gpus)
    names = [("default", {})]
    if kind == "cuda" and params["p2p_disabled_sweep"]:
        names.append(("p2p_disabled", dict(P2P_DISABLED_ENV)))
    plan = worker_plan(backend, kind, world_size, sizes, params)
    for name, env in names:
        curve, errors = _run_one(name, plan, world_size, env, settings, params)
        data["curves"].append(curve)
        data["errors"].extend(errors)
    data["ring_curves"] = []
    for ring_size in ring_prediction.sub_world_sizes(world_size):
        ring_plan = worker_plan(backend, kind, ring_size, ring_prediction.ring_sizes_bytes(sizes), params)
        curve, errors = _run_one("ring_%d" % ring_size, ring_plan, ring_size, _ring_env(kind), settings, params)
        curve["world_size"] = ring_size
        data["ring_curves"].append(curve)
        data["errors"].extend(errors)
    data["explanation"] = explain_local(kind, world_size, data["curves"], data["topology"], data["environment_nccl"],
                                        bool(params["p2p_disabled_sweep"]))
    data["ring_comparison"] = ring_prediction.comparisons(data["prediction"], _measured_by_size(data, world_size, sizes[-1]))
    status, reason = outcome_of(data["curves"], data["errors"])
    return ProbeResult(status, data, reason, environment)


def _run_one(name: str, plan: Dict[str, Any], world_size: int, env: Dict[str, str], settings: Dict[str, str],
             params: Dict[str, Any]) -> Any:
    """(curve, errors) of one sweep by world_size fresh workers on this host."""
    request = CurveRequest(
        name=name, plan=plan, ranks=[(rank, rank) for rank in range(world_size)], master_addr="127.0.0.1",
        master_port=free_port(), rendezvous_timeout_s=float(params["rendezvous_timeout_s"]),
        curve_timeout_s=float(params["curve_timeout_s"]), env=env, settings=settings, ranks_per_host=world_size,
        hint="all ranks run on this host, so a rank that never joined failed to start; see its error")
    curve, errors, unused_results = run_curve(request, os.environ)
    return curve, errors


def _ring_env(kind: str) -> Dict[str, str]:
    """The ring model assumes no NVLS; a user's own NCCL_NVLS_ENABLE stands (the workers inherit it)."""
    if kind != "cuda" or "NCCL_NVLS_ENABLE" in os.environ:
        return {}
    return dict(RING_ENV)


def _measured_by_size(data: Dict[str, Any], world_size: int, message_bytes: int) -> Dict[int, Any]:
    """n -> ring_prediction.measured_point: the default curve for the probe's own world size, a ring curve below it."""
    measured = {curve["world_size"]: ring_prediction.measured_point(curve, message_bytes) for curve in data["ring_curves"]}
    default = next((curve for curve in data["curves"] if curve["name"] == "default"), None)
    measured[world_size] = ring_prediction.measured_point(default, message_bytes)
    return measured


def _missing(torch: Any, devices: List[Dict[str, Any]], kind: str, backend: str) -> str:
    """Why there is nothing to measure here ('' when there is)."""
    if not devices:
        return "device is cuda but torch sees no CUDA GPU (torch.cuda.is_available() is %s)" % torch.cuda.is_available()
    if kind == "cuda" and len(devices) == 1:
        return ONE_GPU_REASON
    return backend_missing(torch, backend)


if __name__ == "__main__":
    sys.exit(main("collective", DESCRIPTION, collect, requires=("torch",), measures_gpus=True))
