"""The load run in order: idle snapshot, the matmul load on every GPU at once with the sampler running, settle, idle
snapshot, optional cool-down; then the per-GPU summaries. torch and an open NVML session are passed in."""
from __future__ import annotations

import threading
import time
from typing import Any, Dict, List, Optional, Tuple

from probe_packages.load.cooldown import cool_down
from probe_packages.load.matmul_load import READY_TIMEOUT_S, GpuLoad
from probe_packages.load.plan import DTYPES
from probe_packages.load.processes import aggregate, own_pids
from probe_packages.load.summary import summarize_gpu
from probe_packages.load.verify import seeded_operands
from probelib.fields import unavailable
from probelib.measure.bit_compare import TOLERANCE_ULPS
from probelib.measure.sampler import Sampler
from probelib.nvml.clock_event_durations import WindowCounters
from probelib.nvml.clock_event_reasons import CLOCK_EVENT_REASON_BITS
from probelib.nvml.gpu_reads import COLUMNS, GpuReads, match_handles

JOIN_GRACE_S = 120.0
VERIFICATION_RULE = (
    "bit for bit on the same GPU and stream (cuBLAS gives the same bits at every run on one GPU model and toolkit version "
    "while each stream has its own workspace, as PyTorch gives it); the reference's sha256 compared across GPUs of one "
    "model and SM count (same library, same process); a GPU whose two products at rest already differ is compared within "
    "%d units of the dtype's precision at the reference's largest magnitude instead, and says so (mode tolerance)"
    % TOLERANCE_ULPS)


class LoadRun:
    """One run over ``devices`` (measured_devices entries); ``execute()`` returns the data's gpus, samples, processes,
    cooldown and errors."""

    def __init__(self, torch: Any, devices: List[Dict[str, Any]], session: Any, plan: Dict[str, Any],
                 clock: Any = time.monotonic, sleep: Any = time.sleep) -> None:
        self.torch = torch
        self.devices = devices
        self.plan = plan
        self.clock = clock
        self.sleep = sleep
        self.errors: List[Dict[str, Any]] = []
        self.operand_s: Any = None
        self.operand_device = "not generated"
        self.own = own_pids()
        self.matched = match_handles(session, [device["uuid"] for device in devices])
        self.reads: Dict[str, GpuReads] = {}
        for device, (handle, nvml_index) in zip(devices, self.matched):
            if handle is not None:
                self.reads[device["uuid"]] = GpuReads(session.reader, handle)
            else:
                self.errors.append({"gpu": device["index"], "what": "nvml", "error": nvml_index["unavailable"]})
        self.window = WindowCounters({uuid: (reads.reader, reads.handle) for uuid, reads in self.reads.items()}, clock)

    def snapshots(self, origin: float) -> Dict[str, Dict[str, Any]]:
        return {uuid: reads.snapshot(self.own, origin, self.clock) for uuid, reads in self.reads.items()}

    def operands(self) -> Any:
        """A and B once from the fixed seed, copied by every GPU's thread: the same inputs everywhere."""
        a, b, seconds, where = seeded_operands(self.torch, self.plan["matmul_n"], getattr(self.torch, DTYPES[self.plan["dtype"]]),
                                               self.plan["seed"], self.devices[0]["index"])
        self.operand_s, self.operand_device = seconds, where
        return a, b

    def load(self) -> Tuple[List[GpuLoad], Optional[Sampler], float]:
        """Start every GPU's thread, wait until each is ready (operands allocated, warmed up), then start the sampler
        and release them together; join them after the deadline."""
        go = threading.Event()
        timing: Dict[str, float] = {}
        operands = self.operands()
        loads = [GpuLoad(self.torch, device["index"], self.plan, go, timing, operands, self.clock).start() for device in self.devices]
        for each in loads:
            each.ready.wait(READY_TIMEOUT_S)
            each.operands = None
        operands = None
        origin = self.clock()
        timing["origin"] = origin
        timing["deadline"] = origin + self.plan["duration_s"]
        sampler = Sampler(self.reads, self.plan["sample_interval_s"], self.plan["process_interval_s"], origin, self.own,
                          self.clock).start() if self.reads else None
        self.window.start()
        go.set()
        for each in loads:
            each.thread.join(self.plan["duration_s"] + JOIN_GRACE_S)
            if each.thread.is_alive():
                each.error = each.error or "the load thread did not finish within %g s of its deadline (%s)" % (
                    JOIN_GRACE_S, each.stage)
        self.window.end()
        if sampler is not None:
            sampler.stop()
        return loads, sampler, origin

    def release_memory(self, loads: List[GpuLoad]) -> None:
        """Free the cached operands of every GPU whose thread finished (a hung one would hang the synchronize too)."""
        for device, each in zip(self.devices, loads):
            if each.thread.is_alive():
                continue
            try:
                with self.torch.cuda.device(device["index"]):
                    self.torch.cuda.synchronize()
                    self.torch.cuda.empty_cache()
            except Exception as exc:  # a broken GPU is already recorded by its load
                self.errors.append({"gpu": device["index"], "what": "release", "error": "%s: %s" % (type(exc).__name__, exc)})

    def execute(self) -> Dict[str, Any]:
        before_origin = self.clock()
        before = self.snapshots(before_origin)
        loads, sampler, origin = self.load()
        shift = round(before_origin - origin, 3)
        for snapshot in before.values():
            snapshot["t_s"] = round(snapshot["t_s"] + shift, 3)
        self.release_memory(loads)
        self.sleep(self.plan["settle_s"])
        after = self.snapshots(origin)
        cooldown = cool_down(self.reads, before, self.plan["cooldown_s"], self.plan["cooldown_interval_s"], self.clock,
                             self.sleep)
        gpus = [self.gpu_entry(device, matched, each, sampler, before, after)
                for device, matched, each in zip(self.devices, self.matched, loads)]
        for device, each in zip(self.devices, loads):
            if each.error:
                self.errors.append({"gpu": device["index"], "what": "load", "error": each.error})
        if sampler is not None:
            self.errors.extend({"gpu": None, "what": "sampling", "error": error} for error in sampler.errors)
        return {"gpus": gpus, "samples": samples_section(sampler), "processes": processes_section(sampler, self.own),
                "cooldown": cooldown, "errors": self.errors,
                "verification": verification_section(self.plan, self.operand_s, self.operand_device)}

    def gpu_entry(self, device: Dict[str, Any], matched: Tuple[Any, Any], each: GpuLoad, sampler: Optional[Sampler],
                  before: Dict[str, Any], after: Dict[str, Any]) -> Dict[str, Any]:
        handle, nvml_index = matched
        entry: Dict[str, Any] = {"index": device["index"], "uuid": device["uuid"], "name": device["name"],
                                 "nvml_index": nvml_index, "load": each.result(), "correctness": each.correctness()}
        uuid = device["uuid"]
        if handle is None or sampler is None:
            why = nvml_index["unavailable"] if handle is None else "the sampler did not run"
            for key in ("idle_before", "idle_after", "active", "differences", "clocks", "throttle", "power",
                        "clock_event_durations_window"):
                entry[key] = unavailable(why)
            entry["sample_failures"] = {}
            return entry
        entry["idle_before"] = before[uuid]
        entry["idle_after"] = after[uuid]
        entry.update(summarize_gpu(sampler.rows[uuid], before[uuid], after[uuid], each.end_s, self.plan))
        entry["sample_failures"] = sampler.failures[uuid]
        entry["clock_event_durations_window"] = self.window.deltas(uuid)
        return entry


def verification_section(plan: Dict[str, Any], operand_s: Any, operand_device: str) -> Dict[str, Any]:
    """How the products were checked, once for every GPU (each GPU's outcome is its gpus[i].correctness)."""
    return {"seed": plan["seed"], "operands_made_on": operand_device,
            "operands_s": operand_s if operand_s is not None else unavailable("not generated"),
            "every_checkpoints": plan["verify_every_checkpoints"], "rule": VERIFICATION_RULE}


def samples_section(sampler: Optional[Sampler]) -> Any:
    if sampler is None:
        return unavailable("no GPU could be read through NVML: nothing was sampled")
    section: Dict[str, Any] = {"columns": list(COLUMNS), "t_origin": "the load's start: the moment every GPU was released",
                               "reason_bits": {name: bit for bit, name in CLOCK_EVENT_REASON_BITS}}
    section.update(sampler.timing())
    section["rows_per_gpu"] = sampler.rows
    return section


def processes_section(sampler: Optional[Sampler], own: List[int]) -> Any:
    if sampler is None:
        return unavailable("no GPU could be read through NVML: no process was listed")
    return aggregate(sampler.process_observations, own)
