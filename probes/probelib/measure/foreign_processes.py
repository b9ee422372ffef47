"""The compute processes on each GPU that are not this probe's, listed before and during its measurement.

A GPU that another job computes on is busy: what a probe measures there is shared with that job and says nothing of
the GPU's health. The runner (probelib/runner.py) watches for every measuring probe: one NVML listing before
``collect`` runs, one every ``interval_s`` from a thread while it runs and one as it ends; the record goes into the
probe's data as ``foreign_gpu_processes`` (schemas/common.schema.json), so the judge needs no other probe's result and
no timing to know the GPU was busy. The probe measures all the same and the judge marks what it measured there "not
validated: busy" (docs/health.md, "A busy GPU").

A process is the probe's own when its pid is the probe's (in any PID namespace /proc shows) or a descendant's (the
together phase's workers, a fresh CUDA process). The listing before is taken before the probe has a CUDA context, so
everything in it is foreign, whatever PID namespace NVML reports; a process first seen during the measurement whose
pid this /proc does not show can be the probe's own seen from another PID namespace (a container): it is recorded as
unattributed, never as foreign. Standard library and nvidia-ml-py only; without NVML the record is
``{"unavailable": reason}``.
"""
from __future__ import annotations

import os
import threading
from typing import Any, Callable, Dict, List, Optional, Set

from probelib.fields import is_unavailable, unavailable
from probelib.nvml.gpu_processes import read_processes

RECORD_KEY = "foreign_gpu_processes"
DEFAULT_INTERVAL_S = 1.0
LOCK_WAIT_S = 5.0
JOIN_WAIT_S = 5.0
METHOD = ("NVML's compute processes of every GPU (nvmlDeviceGetComputeRunningProcesses), listed once before the "
          "measurement and every interval_s while it runs (the last as it ends); a process is the probe's own when its "
          "pid is the probe's or a descendant's (/proc/<pid>/stat). before: every process listed then (the probe has "
          "no CUDA context yet); during: the others seen while it ran, with the most memory seen; unattributed: pids "
          "first seen during it that this /proc does not show (possibly the probe's own, from another PID namespace)")


def own_pids(proc_root: str = "/proc") -> Set[int]:
    """This process's pid, and its pid in every PID namespace /proc shows (NSpid)."""
    pids = {os.getpid()}
    try:
        with open(os.path.join(proc_root, "self", "status"), encoding="utf-8") as handle:
            for line in handle:
                if line.startswith("NSpid:"):
                    pids.update(int(word) for word in line.split()[1:] if word.isdigit())
    except OSError:
        pass
    return pids


def parent_pid(pid: int, proc_root: str = "/proc") -> Optional[int]:
    """The parent of pid from /proc/<pid>/stat, or None when it is not visible here."""
    try:
        with open(os.path.join(proc_root, str(pid), "stat"), encoding="utf-8", errors="replace") as handle:
            text = handle.read()
    except OSError:
        return None
    fields = text[text.rfind(")") + 2:].split()  # the name may hold spaces and parentheses
    return int(fields[1]) if len(fields) > 1 and fields[1].isdigit() else None


def visible(pid: int, proc_root: str = "/proc") -> bool:
    return os.path.isdir(os.path.join(proc_root, str(pid)))


def descends_from(pid: int, ancestors: Set[int], proc_root: str = "/proc", depth: int = 64) -> bool:
    """Whether pid is one of ancestors or their descendant, following parents through /proc."""
    current: Optional[int] = pid
    for unused_step in range(depth):
        if current is None or current <= 1:
            return False
        if current in ancestors:
            return True
        current = parent_pid(current, proc_root)
    return False


def _merge(into: Dict[int, Dict[str, Any]], process: Dict[str, Any]) -> None:
    """Keep one entry per pid with the most memory seen."""
    known = into.get(process["pid"])
    if known is None:
        into[process["pid"]] = dict(process)
        return
    used, seen = process.get("used_memory_mib"), known.get("used_memory_mib")
    if isinstance(used, (int, float)) and (not isinstance(seen, (int, float)) or used > seen):
        known["used_memory_mib"] = used
    if is_unavailable(known.get("name")) and isinstance(process.get("name"), str):
        known["name"] = process["name"]


class _GpuWatch:
    """What was seen on one GPU."""

    def __init__(self, nvml_index: int, uuid: Any) -> None:
        self.nvml_index = nvml_index
        self.uuid = uuid
        self.before: Any = None
        self.during: Dict[int, Dict[str, Any]] = {}
        self.unattributed: Dict[int, Dict[str, Any]] = {}
        self.during_failure: Any = None
        self.listed_during = False

    def record(self) -> Dict[str, Any]:
        during: Any = sorted(self.during.values(), key=lambda entry: entry["pid"])
        if not self.listed_during:
            during = self.during_failure or unavailable("no listing was taken while the probe measured")
        return {"nvml_index": self.nvml_index, "uuid": self.uuid,
                "before": self.before if self.before is not None else unavailable("no listing was taken before the probe measured"),
                "during": during, "unattributed": sorted(self.unattributed.values(), key=lambda entry: entry["pid"])}


class ForeignProcessWatch:
    """start() lists every GPU's compute processes (before) and starts the thread; finish() lists them once more and
    returns the record. ``open_session`` returns an opened probelib.nvml.access.NvmlSession (a test hands a fake)."""

    def __init__(self, open_session: Callable[[], Any], interval_s: float = DEFAULT_INTERVAL_S, proc_root: str = "/proc") -> None:
        self.open_session = open_session
        self.interval_s = max(0.05, float(interval_s))
        self.proc_root = proc_root
        self.session: Any = None
        self.problem = ""
        self.own: Set[int] = set()
        self.gpus: List[_GpuWatch] = []
        self.listings = 0
        self.lock = threading.Lock()
        self.stop = threading.Event()
        self.thread: Optional[threading.Thread] = None

    def start(self) -> "ForeignProcessWatch":
        try:
            self.session = self.open_session()
        except Exception as exc:  # the watch must never stop the measurement
            self.problem = "NVML could not be opened: %s: %s" % (type(exc).__name__, exc)
            return self
        if not self.session.usable:
            self.problem = self.session.reason or "NVML is not usable"
            self.session.close()
            return self
        self.own = own_pids(self.proc_root)
        reader = self.session.reader
        for index, handle in enumerate(self.session.handles):
            if handle is None:
                continue
            ok, uuid = reader.attempt("nvmlDeviceGetUUID", handle)
            self.gpus.append(_GpuWatch(index, str(uuid) if ok else unavailable("NVML did not give the GPU's UUID")))
        self._list(before=True)
        self.thread = threading.Thread(target=self._run, name="foreign-gpu-processes", daemon=True)
        self.thread.start()
        return self

    def _run(self) -> None:
        while not self.stop.wait(self.interval_s):
            self._list(before=False)
        self._list(before=False)  # as the measurement ends: in this thread too, so that a hanging NVML holds nothing

    def _list(self, before: bool) -> None:
        if not self.lock.acquire(timeout=LOCK_WAIT_S):  # a listing still hanging in NVML: never wait on it
            return
        try:
            self.listings += 1
            for gpu in self.gpus:
                self._list_gpu(gpu, self.session.handles[gpu.nvml_index], before)
        except Exception as exc:  # a listing that fails is said, never raised into the measurement
            for gpu in self.gpus:
                if before and gpu.before is None:
                    gpu.before = unavailable("the listing failed: %s: %s" % (type(exc).__name__, exc))
        finally:
            self.lock.release()

    def _list_gpu(self, gpu: _GpuWatch, handle: Any, before: bool) -> None:
        listed = read_processes(self.session.reader, handle, "Compute", self.proc_root)
        if is_unavailable(listed):
            if before:
                gpu.before = listed
            elif not gpu.listed_during:
                gpu.during_failure = listed
            return
        if before:
            gpu.before = [dict(process) for process in listed]
            return
        gpu.listed_during = True
        was_before = {process["pid"] for process in gpu.before} if isinstance(gpu.before, list) else set()
        for process in listed:
            pid = process["pid"]
            if pid in self.own or descends_from(pid, self.own, self.proc_root):
                continue
            if pid in was_before or visible(pid, self.proc_root):
                _merge(gpu.during, process)
            else:
                _merge(gpu.unattributed, process)

    def finish(self) -> Dict[str, Any]:
        """Stop the thread, list once more (as the measurement ends) and return the record."""
        if self.thread is not None:
            self.stop.set()
            wait_s = max(JOIN_WAIT_S, 2 * self.interval_s)
            self.thread.join(wait_s)
            if self.thread.is_alive():
                self.problem = "a listing of the GPUs' processes did not return within %g s (NVML hangs)" % wait_s
            else:
                self.session.close()
        if self.problem:
            return unavailable(self.problem)
        return {"method": METHOD, "interval_s": self.interval_s, "listings": self.listings,
                "own_pids": sorted(self.own), "gpus": [gpu.record() for gpu in self.gpus]}


def open_nvml_session() -> Any:
    from probelib.nvml.access import NvmlSession
    return NvmlSession().open()


def watch(interval_s: float = DEFAULT_INTERVAL_S) -> ForeignProcessWatch:
    """Start watching the host's GPUs through NVML."""
    return ForeignProcessWatch(open_nvml_session, interval_s).start()
