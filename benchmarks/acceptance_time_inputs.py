"""The acceptance time model's terms, read from recorded rig results: each a number of seconds with its source.

A run directory is what the store wrote (RUN/<host>/<probe>.json, run.json); the playbook's wall time is not in the
store, so it comes from --wall-s or from the rig's summary.txt beside the run ("acceptance run 1 rc=0 in 248 s").
Optional: a pairs run (a run of 2 or more GPUs: its p2p and collective results time the pairs and the sweeps) and a
two-worker run (the per-GPU probes' `together` records of the 1-GPU rig run with workers_per_gpu 2). What a phase
needs and the results do not hold makes that phase missing, with the file and field named.
"""
from __future__ import annotations

import datetime
import json
import os
import re
from dataclasses import dataclass, field
from typing import Any, Dict, List, Mapping, Optional, Tuple

from acceptance_time_model import PhaseInputs, Term

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PER_GPU_PROBES = ("membw", "fusion", "gemm", "hostbw")
# Published rates (/work/shared/REFERENCE.md, "Known-good H200 SXM results, public" and the field figures).
NVLINK_ONE_WAY_GBPS = 396.4
NVLINK_BOTH_WAYS_GBPS = 783.7
NVLINK_SOURCE = "nvbandwidth D2D write CE on H200 SXM, 396.4 GB/s one way, 783.7 both ways (ml-engineering book, REFERENCE.md)"
ALLREDUCE_BUSBW_GBPS = 367.0
ALLREDUCE_SOURCE = "8 x H200 all-reduce busbw 367 GB/s ring-only, NVLS off (NCCL 2.27 field figure, REFERENCE.md)"
MEMTEST_BUDGET_S = 30.0
MEMTEST_BUDGET_SOURCE = "the acceptance budget_s of issue 35 (memtest: 30 s)"
SUMMARY_LINE = re.compile(r"^acceptance run \d+ rc=\d+ in (\d+(?:\.\d+)?) s\s*$")


class Missing(Exception):
    """A phase's input the recorded results do not hold; the message names the file and field."""


@dataclass
class Run:
    """One recorded run of one host: its probe envelopes by name, and where it came from."""
    label: str
    host_dir: str
    envelopes: Dict[str, Dict[str, Any]]
    run_id: str = ""
    wall_s: Optional[float] = None
    wall_source: str = ""
    problems: List[str] = field(default_factory=list)

    def envelope(self, probe: str) -> Dict[str, Any]:
        if probe not in self.envelopes:
            raise Missing("%s.json is not in %s" % (probe, self.label))
        return self.envelopes[probe]


def get(obj: Any, *path: Any, what: str = "") -> Any:
    """obj[path[0]][path[1]]..., or Missing naming the path (``what`` names the file)."""
    found = obj
    for step in path:
        try:
            found = found[step]
        except (KeyError, IndexError, TypeError) as exc:
            raise Missing("%s has no %s" % (what or "the result", ".".join(str(part) for part in path))) from exc
    if isinstance(found, dict) and set(found) == {"unavailable"}:
        raise Missing("%s: %s is unavailable (%s)" % (what or "the result", ".".join(str(part) for part in path), found["unavailable"]))
    return found


def unix_seconds(started: str) -> float:
    """An envelope's `started` (ISO 8601, whole seconds) as Unix seconds."""
    return datetime.datetime.fromisoformat(started.replace("Z", "+00:00")).timestamp()


def run_id_seconds(run_id: str) -> Optional[float]:
    """The run id's time (YYYYMMDDTHHMMSSZ-...), whole seconds, or None."""
    try:
        moment = datetime.datetime.strptime(run_id.split("-")[0], "%Y%m%dT%H%M%SZ")
    except ValueError:
        return None
    return moment.replace(tzinfo=datetime.timezone.utc).timestamp()


def label_of(run_dir: str) -> str:
    parts = os.path.normpath(os.path.abspath(run_dir)).split(os.sep)
    return "/".join(parts[-2:])


def host_dir_of(run_dir: str, host: Optional[str] = None) -> str:
    """RUN/<host>: the named host, else the one host directory there is; a host directory itself is taken as it is."""
    if any(name.endswith(".json") and name not in ("run.json", "fleet.json") for name in os.listdir(run_dir)):
        return run_dir
    hosts = sorted(name for name in os.listdir(run_dir) if os.path.isdir(os.path.join(run_dir, name)))
    if host is not None:
        if host not in hosts:
            raise Missing("%s has no host %r (hosts: %s)" % (run_dir, host, ", ".join(hosts) or "none"))
        return os.path.join(run_dir, host)
    if len(hosts) != 1:
        raise Missing("%s holds %d host directories (%s): name one with --host" % (run_dir, len(hosts), ", ".join(hosts)))
    return os.path.join(run_dir, hosts[0])


def summary_wall_s(run_dir: str) -> Optional[float]:
    """The rig's acceptance wall time from summary.txt beside the run (tools/rig_out_of_the_box.sh writes it)."""
    path = os.path.join(os.path.dirname(os.path.abspath(run_dir)), "summary.txt")
    try:
        with open(path, encoding="utf-8") as handle:
            lines = handle.read().splitlines()
    except OSError:
        return None
    walls = [float(found.group(1)) for found in (SUMMARY_LINE.match(line) for line in lines) if found]
    return walls[0] if len(walls) == 1 else None


def load_run(run_dir: str, host: Optional[str] = None, wall_s: Optional[float] = None, label: str = "") -> Run:
    """The run's probe envelopes; label names it in every source (default: its last two path parts)."""
    if not os.path.isdir(run_dir):
        raise Missing("%s is not a directory" % run_dir)
    host_dir = host_dir_of(run_dir, host)
    envelopes: Dict[str, Dict[str, Any]] = {}
    problems = []
    for name in sorted(os.listdir(host_dir)):
        if not name.endswith(".json"):
            continue
        try:
            with open(os.path.join(host_dir, name), encoding="utf-8") as handle:
                document = json.load(handle)
        except (OSError, ValueError) as exc:
            problems.append("%s: %s" % (name, exc))
            continue
        if isinstance(document, dict) and "probe" in document and "duration_s" in document:
            envelopes[document["probe"]] = document
    run_dir_top = run_dir if host_dir != run_dir else os.path.dirname(host_dir)
    run = Run(label or label_of(run_dir_top), host_dir, envelopes, os.path.basename(os.path.normpath(run_dir_top)), problems=problems)
    if wall_s is not None:
        run.wall_s, run.wall_source = wall_s, "given (--wall-s)"
    else:
        run.wall_s = summary_wall_s(run_dir_top)
        run.wall_source = "the rig's summary.txt" if run.wall_s is not None else ""
    return run


def measured(run: Run, what: str) -> str:
    return "measured (%s): %s" % (run.label, what)


# --- the playbook's own phases -------------------------------------------------------------------------------------

def probe_span(run: Run) -> Tuple[float, float, List[Dict[str, Any]]]:
    """(first probe's start, last probe's end, envelopes in start order), from each envelope's started + duration_s."""
    ordered = sorted(run.envelopes.values(), key=lambda envelope: (unix_seconds(envelope["started"]), envelope["probe"]))
    if not ordered:
        raise Missing("%s holds no probe result" % run.label)
    last = max(ordered, key=lambda envelope: unix_seconds(envelope["started"]) + envelope["duration_s"])
    return unix_seconds(ordered[0]["started"]), unix_seconds(last["started"]) + last["duration_s"], ordered


def playbook(run: Run) -> PhaseInputs:
    first, last, unused_ordered = probe_span(run)
    if run.wall_s is None:
        raise Missing("no wall time for %s: give --wall-s, or keep the rig's summary.txt beside the run" % run.label)
    return PhaseInputs({"fixed": Term(run.wall_s - (last - first), measured(
        run, "wall %.0f s (%s) - the probes' span %.1f s (first start to last end)" % (run.wall_s, run.wall_source, last - first)))})


def engine(run: Run) -> PhaseInputs:
    """The controller's time between one probe's end and the next one's start, on average (starts are whole seconds)."""
    unused_first, unused_last, ordered = probe_span(run)
    if len(ordered) < 2:
        raise Missing("%s holds %d probe result: no gap between probes" % (run.label, len(ordered)))
    starts = [unix_seconds(envelope["started"]) for envelope in ordered]
    gaps = (starts[-1] - starts[0]) - sum(envelope["duration_s"] for envelope in ordered[:-1])
    return PhaseInputs({"per_probe": Term(gaps / (len(ordered) - 1), measured(
        run, "%.1f s between %d probes' ends and the next starts" % (gaps, len(ordered) - 1)))})


# --- probes that do not scale with n --------------------------------------------------------------------------------

def whole_probe(run: Run, probe: str) -> PhaseInputs:
    envelope = run.envelope(probe)
    return PhaseInputs({"fixed": Term(envelope["duration_s"], measured(run, "%s duration_s" % probe))})


def health(run: Run) -> PhaseInputs:
    envelope = run.envelope("health")
    what = "health.json"
    cuda_init = get(envelope, "data", "cuda_init", what=what)
    devices = get(cuda_init, "devices", what=what + " data.cuda_init")
    if not devices:
        raise Missing("health.json data.cuda_init.devices is empty: no per-GPU time")
    context = sum(get(device, "duration_s", what=what + " cuda_init device") for device in devices) / len(devices)
    reads = envelope["duration_s"] - get(cuda_init, "wall_s", what=what + " data.cuda_init")
    per_gpu = context + reads / len(devices)
    return PhaseInputs({
        "fixed": Term(envelope["duration_s"] - per_gpu * len(devices), measured(run, "health duration_s less the per-GPU part")),
        "per_gpu": Term(per_gpu, measured(run, "CUDA context + 1 MiB check %.2f s (cuda_init devices) + NVML reads at most %.2f s "
                                               "(duration_s - cuda_init wall_s: an upper bound)" % (context, reads / len(devices))))})


def worker_start(run: Run) -> Term:
    """A fresh process that imports torch and initialises CUDA: the health probe's cuda_init child, timed from outside."""
    wall = get(run.envelope("health"), "data", "cuda_init", "wall_s", what="health.json")
    return Term(wall, measured(run, "a fresh process importing torch and initialising CUDA (health cuda_init wall_s)"))


# --- the per-GPU probes: start, alone (per GPU), the together headline ---------------------------------------------

def devices_of(run: Run, probe: str) -> List[Dict[str, Any]]:
    devices = get(run.envelope(probe), "data", "devices", what=probe + ".json")
    if not devices:
        raise Missing("%s.json data.devices is empty" % probe)
    return devices


def membw_device(device: Mapping[str, Any]) -> Tuple[float, float]:
    """(the sweep's and the repeats' timed copies, the repeats alone) of one device, in seconds."""
    what = "membw.json device"
    sweep = sum(get(point, "time_per_copy_s", what=what) * get(point, "iterations", what=what)
                for point in get(device, "sweep", what=what) if point.get("status") == "measured")
    repeats = get(device, "repeats", what=what)
    headline = sum(seconds * get(repeats, "iterations", what=what) for seconds in get(repeats, "times_per_copy_s", what=what))
    return sweep + headline, headline


def fusion_device(device: Mapping[str, Any], repeats: int, warmup: int) -> float:
    """Compiling and timing every size of one device: compile_s + (repeats x iterations + warm-up) x time per call."""
    total = 0.0
    for point in get(device, "points", what="fusion.json device"):
        if point.get("status") != "measured":
            continue
        total += get(point, "compile", "compile_s", what="fusion.json point")
        for kind in ("fused", "unfused"):
            timed = get(point, kind, what="fusion.json point")
            total += (repeats * get(timed, "iterations", what="fusion.json point") + warmup) * get(timed, "time_per_iteration_s", what="fusion.json point")
    return total


def gemm_device(device: Mapping[str, Any]) -> float:
    before = get(device, "gpu_state_before", "time_unix_s", what="gemm.json device")
    after = get(device, "gpu_state_after", "time_unix_s", what="gemm.json device")
    return after - before


def gemm_sustained(device: Mapping[str, Any], dtypes: List[str]) -> float:
    """The sustained phase of every power-state dtype: the settling time and the timed windows."""
    total = 0.0
    for dtype in dtypes:
        sustained = get(device, "dtypes", dtype, "power_states", "sustained", what="gemm.json device")
        total += get(sustained, "settle_s", what="gemm.json sustained") + sum(
            get(window, "duration_s", what="gemm.json sustained window") for window in get(sustained, "windows", what="gemm.json sustained"))
    return total


def gemm_burst_idle(device: Mapping[str, Any], dtypes: List[str]) -> float:
    """How long the bursts waited for an idle GPU before their windows (idle_before.waited_s)."""
    total = 0.0
    for dtype in dtypes:
        burst = get(device, "dtypes", dtype, "power_states", "burst", what="gemm.json device")
        total += sum((window.get("idle_before") or {}).get("waited_s") or 0.0 for window in get(burst, "windows", what="gemm.json burst"))
    return total


def verified(devices: List[Mapping[str, Any]]) -> bool:
    """Whether the gemm run checked its products (issue 35): then the check's time is inside the alone span."""
    return any("verification" in result for device in devices for result in device.get("results") or [])


def gemm_correctness(device: Mapping[str, Any]) -> float:
    """One more product per case and both outputs read once at the device's memory bandwidth (the roofline's)."""
    bandwidth = get(device, "roofline", "bandwidth_gbps", what="gemm.json device") * 1e9
    total = 0.0
    for result in get(device, "results", what="gemm.json device"):
        timing = result.get("measurement") or {}
        if "time_per_iteration_us" not in timing:
            continue
        output_bytes = result["m"] * result["n"] * get(device, "dtypes", result["dtype"], "output_element_bytes", what="gemm.json device")
        total += timing["time_per_iteration_us"] * 1e-6 + 2 * output_bytes / bandwidth
    return total


def hostbw_device_span(run: Run) -> float:
    """From the first device's NVML snapshot before its copies to the probe's end, per device (starts are whole seconds,
    so the span is at least this)."""
    envelope = run.envelope("hostbw")
    devices = devices_of(run, "hostbw")
    before = get(devices[0], "gpu_state_before", "time_unix_s", what="hostbw.json device")
    return (unix_seconds(envelope["started"]) + envelope["duration_s"] - before) / len(devices)


def hostbw_headline(device: Mapping[str, Any], warmup: int) -> float:
    """Pinned host->device and device->host at the plan's size: (repeats x copies + warm-up) x bytes / rate."""
    total = 0.0
    for result in get(device, "results", what="hostbw.json device"):
        if result.get("host_memory") == "pinned" and result.get("direction") in ("h2d", "d2h"):
            copies = len(result["repeats_gbps"]) * result["copies_per_repeat"] + warmup
            total += copies * result["bytes_per_copy"] / (result["median_gbps"] * 1e9)
    if not total:
        raise Missing("hostbw.json device has no pinned h2d/d2h result")
    return total


def per_gpu_probe(run: Run, probe: str) -> Tuple[float, float, str, str]:
    """(alone seconds per GPU, headline seconds per worker, how each was read) of one per-GPU probe."""
    devices = devices_of(run, probe)
    plan = get(run.envelope(probe), "data", "plan", what=probe + ".json")
    if probe == "membw":
        pairs = [membw_device(device) for device in devices]
        return (sum(pair[0] for pair in pairs) / len(pairs), max(pair[1] for pair in pairs),
                "timed copies of the sweep and the repeats (lower bound: allocation and checks not counted)",
                "the repeats at the headline size (%s MiB)" % get(devices[0], "repeats", "size_mib", what="membw.json device"))
    if probe == "fusion":
        seconds = [fusion_device(device, get(plan, "repeats", what="fusion.json plan"), get(plan, "warmup_iterations", what="fusion.json plan"))
                   for device in devices]
        return (sum(seconds) / len(seconds), max(seconds), "compile_s + timed calls of every size (lower bound)",
                "a worker's device run, as alone")
    if probe == "gemm":
        dtypes = list(get(plan, "power_state_dtypes", what="gemm.json plan"))
        idle = sum(gemm_burst_idle(device, dtypes) for device in devices) / len(devices)
        return (sum(gemm_device(device) for device in devices) / len(devices), max(gemm_sustained(device, dtypes) for device in devices),
                "gpu_state_before to gpu_state_after of each device, of which %.1f s the bursts' idle holds" % idle,
                "the sustained settle + windows of %s" % ", ".join(dtypes))
    if probe == "hostbw":
        warmup = get(plan, "warmup", what="hostbw.json plan")
        return (hostbw_device_span(run), max(hostbw_headline(device, warmup) for device in devices),
                "first device's gpu_state_before to the probe's end", "pinned H2D + D2H at the plan's size")
    raise ValueError("not a per-GPU probe: %r" % probe)


def together_record(together: Optional[Run], probe: str) -> Optional[Dict[str, Any]]:
    """The probe's run_together record in the two-worker run (None: no such run, or its together is unavailable)."""
    if together is None or probe not in together.envelopes:
        return None
    record = together.envelopes[probe].get("data", {}).get("together")
    if not isinstance(record, dict) or "wall_s" not in record or not record.get("workers"):
        return None
    return record


def together_terms(together: Optional[Run], probe: str, headline: float, headline_what: str, start: Term) -> Dict[str, Term]:
    """A worker's terms: from the two-worker run's together record, else assumed from the alone run (the headline's
    time, after a start like the probe's own: a process importing what the probe imports and initialising CUDA)."""
    record = together_record(together, probe)
    if record is None or together is None:
        why = "no two-worker run given" if together is None else "%s holds no together record of %s" % (together.label, probe)
        return {"worker": Term(headline, "assumed, %s: a worker's work = the alone headline time (%s)" % (why, headline_what)),
                "worker_start": Term(start.value, "assumed: a worker starts like the probe (%s start above)" % probe),
                "spawn": Term(0.0, "assumed, %s: workers start in parallel" % why)}
    durations = [worker["duration_s"] for worker in record["workers"] if worker.get("duration_s") is not None]
    if not durations:
        raise Missing("%s: %s.json together has no worker duration_s" % (together.label, probe))
    slowest = max(durations)
    count = len(record["workers"])
    spawn = max(0.0, record["wall_s"] - slowest) / count
    return {"worker": Term(slowest, "measured (%s): slowest of %d workers' duration_s (its start, torch, CUDA included)" % (together.label, count)),
            "worker_start": Term(0.0, "inside the workers' duration_s"),
            "spawn": Term(spawn, "measured (%s): (wall_s %.1f - slowest %.1f) / %d workers" % (together.label, record["wall_s"], slowest, count))}


def per_gpu_phases(run: Run, together: Optional[Run], probe: str) -> Dict[str, PhaseInputs]:
    envelope = run.envelope(probe)
    devices = devices_of(run, probe)
    alone, headline, alone_what, headline_what = per_gpu_probe(run, probe)
    start = Term(envelope["duration_s"] - alone * len(devices), measured(
        run, "%s duration_s less the per-GPU part: process, torch import, CUDA init, result" % probe))
    phases = {
        probe + " start": PhaseInputs({"fixed": start}),
        probe + " alone": PhaseInputs({"per_gpu": Term(alone, measured(run, alone_what))}),
        probe + " together": PhaseInputs(together_terms(together, probe, headline, headline_what, start)),
    }
    if probe == "gemm" and verified(devices):
        phases["gemm correctness check"] = PhaseInputs({"per_gpu": Term(0.0, measured(
            run, "inside gemm alone: its results carry their verification, made between gpu_state_before and gpu_state_after"))})
    elif probe == "gemm":
        check = sum(gemm_correctness(device) for device in devices) / len(devices)
        phases["gemm correctness check"] = PhaseInputs({"per_gpu": Term(check, (
            "estimated from %s: one more product per case + both outputs read at the membw rate (the run predates the check)"
            % run.label))})
    return phases


# --- pairs and ranks -------------------------------------------------------------------------------------------------

def p2p_plan_seconds(plan: Mapping[str, Any]) -> Tuple[float, float]:
    """(seconds, GB) of one ordered pair's copies by its plan at the published NVLink rates: the one-way sweep, the
    two-way sweep (each direction at half the two-way rate), the data checks (each size copied once more), warm-ups in."""
    sizes = sum(get(plan, "sizes_bytes", what="p2p.json plan"))
    copies = get(plan, "warmup", what="p2p.json plan") + get(plan, "repeats", what="p2p.json plan") * get(plan, "iterations", what="p2p.json plan")
    one_way = sizes * (copies + 1)
    seconds = one_way / (NVLINK_ONE_WAY_GBPS * 1e9)
    moved = one_way
    if plan.get("bidirectional"):
        seconds += one_way / (NVLINK_BOTH_WAYS_GBPS / 2 * 1e9)
        moved += 2 * one_way
    return seconds, moved / 1e9


# A pairs run records its probes' whole durations, not their starts: the 1-GPU run's start stands in for them.
OWN_START_UNKNOWN = ("an upper bound where the pairs run's probes started slower than the 1-GPU run's, as a run without the "
                     "bytecode cache does")


def p2p(run: Run, pairs: Optional[Run]) -> PhaseInputs:
    envelope = run.envelope("p2p")
    if get(envelope, "data", what="p2p.json").get("pairs"):
        raise Missing("%s's p2p measured pairs: the model starts from a 1-GPU run (--run), a run with pairs is --pairs-run" % run.label)
    fixed = Term(envelope["duration_s"], measured(run, "p2p duration_s: start, torch, CUDA; fewer than 2 GPUs stop there"))
    plan_s, plan_gb = p2p_plan_seconds(get(envelope, "data", "plan", what="p2p.json"))
    recorded = pairs.envelopes.get("p2p") if pairs is not None else None
    if recorded and recorded.get("data", {}).get("pairs"):
        count = len(recorded["data"]["pairs"])
        per_pair = (recorded["duration_s"] - fixed.value) / count
        return PhaseInputs({"fixed": fixed, "per_pair": Term(per_pair, (
            "measured (%s): (p2p duration_s %.1f - the start above) / %d pairs (%s); the plan's copies alone take %.2f s "
            "at the published NVLink rate" % (pairs.label, recorded["duration_s"], count, OWN_START_UNKNOWN, plan_s)))})
    why = "no pairs run given" if pairs is None else "%s has no p2p pairs" % pairs.label
    return PhaseInputs({"fixed": fixed, "per_pair": Term(plan_s, (
        "estimated (%s): the plan's %.1f GB per pair at %s; copies only, a lower bound" % (why, plan_gb, NVLINK_SOURCE)))})


def collective_plan(envelope: Mapping[str, Any]) -> Dict[str, Any]:
    """The sweep plan: sizes and warm-up as recorded, the iteration bounds from the envelope's params over the defaults
    (plugins/plugin_utils/probes/collective/params.json)."""
    with open(os.path.join(ROOT, "plugins", "plugin_utils", "probes", "collective", "params.json"), encoding="utf-8") as handle:
        spec = json.load(handle)["properties"]
    params = {name: (envelope.get("params") or {}).get(name, entry.get("default")) for name, entry in spec.items()}
    recorded = get(envelope, "data", "plan", what="collective.json")
    return {"sizes_bytes": list(get(recorded, "sizes_bytes", what="collective.json plan")),
            "warmup": int(get(recorded, "warmup", what="collective.json plan")),
            "min_iterations": int(params["min_iterations"]), "max_iterations": int(params["max_iterations"]),
            "target_time_per_size_s": float(params["target_time_per_size_s"]),
            "p2p_disabled_sweep": bool(params["p2p_disabled_sweep"])}


def recorded_sweep_seconds(curve: Mapping[str, Any], warmup: int) -> float:
    """What one recorded sweep's all-reduces took: (warm-up + 2 calibration calls + iterations) x time per call."""
    return sum((point["iterations"] + warmup + 2) * point["time_us"] * 1e-6 for point in curve.get("sweep") or [])


def collective(run: Run, pairs: Optional[Run]) -> PhaseInputs:
    envelope = run.envelope("collective")
    plan = collective_plan(envelope)
    fixed = Term(envelope["duration_s"], measured(run, "collective duration_s: fewer than 2 GPUs stop after the start"))
    recorded = pairs.envelopes.get("collective") if pairs is not None else None
    curves = {curve.get("name"): curve for curve in (recorded or {}).get("data", {}).get("curves", []) if curve.get("sweep")}
    if pairs is not None and recorded and "default" in curves:
        all_curves = list(curves.values()) + list(recorded["data"].get("ring_curves") or [])
        timed = sum(recorded_sweep_seconds(curve, plan["warmup"]) for curve in all_curves)
        start = (recorded["duration_s"] - fixed.value - timed) / len(all_curves)
        terms = {
            "fixed": fixed,
            "sweep_start": Term(start, "measured (%s): (collective duration_s %.1f - the start above - %.1f s of all-reduces) / %d "
                                       "sweeps: ranks start, NCCL init, rendezvous (%s)" % (
                                           pairs.label, recorded["duration_s"], timed, len(all_curves), OWN_START_UNKNOWN)),
            "latency": Term(curves["default"]["sweep"][0]["time_us"] * 1e-6, "measured (%s): the smallest message's time" % pairs.label),
            "busbw_default": Term(curves["default"]["busbw_at_largest_gbps"], "measured (%s): busbw at the largest size, kept for every n"
                                  % pairs.label)}
        if "p2p_disabled" in curves:
            terms["busbw_p2p_disabled"] = Term(curves["p2p_disabled"]["busbw_at_largest_gbps"], "measured (%s): NCCL_P2P_DISABLE=1 "
                                               "busbw at the largest size, kept for every n" % pairs.label)
        else:
            terms["busbw_p2p_disabled"] = shm_busbw(run)
        return PhaseInputs(terms, plan)
    why = "no pairs run given" if pairs is None else "%s has no collective sweep" % pairs.label
    return PhaseInputs({
        "fixed": fixed,
        "sweep_start": Term(worker_start(run).value, "assumed (%s): a sweep's ranks start like one fresh torch + CUDA process, "
                                                     "in parallel; NCCL init not counted (lower bound)" % why),
        "latency": Term(plan["target_time_per_size_s"] / plan["max_iterations"], (
            "upper bound (%s): every small size takes its whole %.1f s target" % (why, plan["target_time_per_size_s"]))),
        "busbw_default": Term(ALLREDUCE_BUSBW_GBPS, "estimated (%s): %s" % (why, ALLREDUCE_SOURCE)),
        "busbw_p2p_disabled": shm_busbw(run)}, plan)


def shm_busbw(run: Run) -> Term:
    """Without P2P NCCL goes through host memory: each byte crosses the GPU's PCIe link out and back."""
    devices = devices_of(run, "hostbw")
    rates = [result["median_gbps"] for result in get(devices[0], "results", what="hostbw.json device")
             if result.get("host_memory") == "pinned" and result.get("direction") == "d2h"]
    if not rates:
        raise Missing("hostbw.json has no pinned d2h rate for the NCCL_P2P_DISABLE=1 estimate")
    return Term(rates[0] / 2, measured(run, "hostbw pinned D2H %.1f GB/s / 2 (estimated: SHM crosses PCIe twice)" % rates[0]))


def memtest(run: Run, budget_s: float) -> PhaseInputs:
    if "memtest" in run.envelopes:
        return whole_probe(run, "memtest")
    start = worker_start(run)
    budget = MEMTEST_BUDGET_SOURCE if budget_s == MEMTEST_BUDGET_S else "--memtest-budget-s"
    return PhaseInputs({"fixed": Term(budget_s + start.value, "estimated (no memtest in %s): budget %.0f s (%s) + a worker's start %.1f s "
                                      "(health cuda_init wall_s, %s)" % (run.label, budget_s, budget, start.value, run.label))})


def phase_inputs(run: Run, together: Optional[Run] = None, pairs: Optional[Run] = None,
                 memtest_budget_s: float = MEMTEST_BUDGET_S) -> Dict[str, PhaseInputs]:
    """Every phase's inputs by name; a phase whose input is missing carries why (PhaseInputs.missing)."""
    found: Dict[str, PhaseInputs] = {}

    def attempt(names: List[str], read: Any) -> None:
        try:
            result = read()
        except Missing as exc:
            for name in names:
                found[name] = PhaseInputs(missing=str(exc))
            return
        if isinstance(result, PhaseInputs):
            found[names[0]] = result
        else:
            found.update(result)

    attempt(["playbook: start, prepare, report, end"], lambda: playbook(run))
    attempt(["probe engine between probes"], lambda: engine(run))
    attempt(["health"], lambda: health(run))
    for probe in ("tuning", "fabric", "toolchain", "precision", "load"):
        attempt([probe], lambda probe=probe: whole_probe(run, probe))
    for probe in PER_GPU_PROBES:
        names = [probe + " start", probe + " alone", probe + " together"] + (["gemm correctness check"] if probe == "gemm" else [])
        attempt(names, lambda probe=probe: per_gpu_phases(run, together, probe))
    attempt(["p2p"], lambda: p2p(run, pairs))
    attempt(["collective"], lambda: collective(run, pairs))
    attempt(["memtest"], lambda: memtest(run, memtest_budget_s))
    return found
