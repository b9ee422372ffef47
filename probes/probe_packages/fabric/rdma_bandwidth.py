"""RDMA bandwidth of each ACTIVE port of each RDMA device, measured on this host with ib_write_bw (perftest): a server
and a client on the same port (loopback, their handshake over 127.0.0.1), with host memory and, where perftest was built
with CUDA and the host has a GPU, with GPU memory (GPUDirect RDMA). The fabric probe's ``rdma_bandwidth`` section
(docs/fabric.md, "RDMA bandwidth (ib_write_bw)").

Runs one after the other; each lasts ``rdma_bandwidth_duration_s`` plus perftest's start (about 2 s, more for CUDA).
"""
from __future__ import annotations

import os
import re
import shutil
import subprocess
import time
from dataclasses import dataclass
from typing import Any, Callable, Dict, List, Mapping, Optional

from probe_packages.fabric.perftest_pair import PairLimits, free_tcp_port, run_pair, tcp_port_listening
from probe_packages.fabric.perftest_report import parse_bandwidth
from probe_packages.fabric.perftest_tool import describe_tool
from probe_packages.fabric.roce_gid import roce_gid_index
from probelib.fields import is_number, is_unavailable, unavailable
from probelib.system.child_process import run_child
from probelib.system.roots import SystemRoots

DEFAULTS = {"rdma_bandwidth": True, "rdma_bandwidth_duration_s": 5, "rdma_bandwidth_message_bytes": 65536,
            "rdma_bandwidth_cuda": True}
MAX_MESSAGE_BYTES = 2147483647  # perftest's -s takes 1 .. UINT_MAX / 2
LOOPBACK_ADDRESS = "127.0.0.1"
MODE = "loopback"
# perftest picks CUDA device <n> with cuDeviceGet(n): in PCI bus order only with CUDA_DEVICE_ORDER=PCI_BUS_ID, the order
# of nvidia-smi and of the fabric probe's gpus list.
CUDA_ENVIRONMENT = {"CUDA_DEVICE_ORDER": "PCI_BUS_ID"}
# The fabric probe runs under a 300 s timeout (plugins/plugin_utils/probes/fabric/run.py); the runs stop in time for
# the rest of its data to come back even when every run hangs to its limit. 16 runs of 5 s (8 ports, host and CUDA)
# take about 2 minutes.
SECTION_BUDGET_S = 240.0
BUDGET_START_S = 2  # perftest's own start: the device opened, the TCP handshake, a 1 s sleep
PEAK_IN_DURATION_MODE = "perftest does not measure the peak in duration mode (-D sets noPeak): it prints 0.00"
_DEVICE_NAME = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9_.:-]*$")
# GPU-to-NIC relations of the fabric probe's gpus[].nearest_nic, nearest first.
RELATIONS = ("same_pcie_switch", "same_root_port", "same_numa_node", "other_numa_node")


@dataclass
class _Settings:
    enabled: bool
    duration_s: int
    message_bytes: int
    cuda: bool


def measure_rdma_bandwidth(rdma_devices: Any, gpu_count: Any, params: Mapping[str, Any],
                           which: Callable[[str], Any] = shutil.which, run: Callable[..., Dict[str, Any]] = run_child,
                           popen: Callable[..., Any] = subprocess.Popen, nearest_gpu: Optional[Mapping[str, int]] = None,
                           roots: Optional[SystemRoots] = None, limits: Optional[PairLimits] = None,
                           budget_s: float = SECTION_BUDGET_S) -> Dict[str, Any]:
    """{"tool", "runs", "skipped"}; or unavailable when the parameters are not usable.

    rdma_devices: the fabric probe's data.rdma_devices; gpu_count: the GPUs a CUDA run may use; nearest_gpu: {RDMA
    device name: CUDA index (PCI bus order) of the GPU nearest it} (nearest_gpu_by_device), else GPU 0 is used.
    budget_s: the most all runs together may take; a run that would start with less than its duration left is not
    started. which, run (argv, timeout_s -> {"returncode", "timed_out", "stdout", "stderr"}) and popen are for tests."""
    try:
        settings = _settings(params)
    except ValueError as exc:
        return unavailable("rdma_bandwidth parameters: %s" % exc)
    tool = describe_tool(which, run)
    section: Dict[str, Any] = {"tool": tool, "runs": [], "skipped": None}
    if not settings.enabled:
        section["skipped"] = "rdma_bandwidth disabled by the profile (parameter rdma_bandwidth: false)"
    # no device first: a host without one needs no perftest, so "apt install perftest" would be bad advice there
    elif is_unavailable(rdma_devices):
        section["skipped"] = "the RDMA devices could not be read: %s" % rdma_devices["unavailable"]
    elif not rdma_devices:
        section["skipped"] = "no RDMA device (/sys/class/infiniband lists none): nothing to measure"
    elif is_unavailable(tool):
        section["skipped"] = "%s: nothing measured" % tool["unavailable"]
    else:
        runner = _Runner(tool, settings, gpu_count, nearest_gpu or {}, popen, roots or SystemRoots(), limits or PairLimits(),
                         budget_s)
        for device in rdma_devices:
            section["runs"].extend(runner.device_runs(device))
    return section


def nearest_gpu_by_device(gpus: Any) -> Dict[str, int]:
    """{RDMA device: the index of the GPU nearest it} from the fabric probe's data.gpus (sorted by PCI address, so the
    index is the CUDA index with CUDA_DEVICE_ORDER=PCI_BUS_ID when CUDA_VISIBLE_DEVICES hides none): of the GPUs whose
    nearest NIC it is, the one with the closest relation, then the first."""
    best: Dict[str, Any] = {}
    for index, gpu in enumerate(gpus if isinstance(gpus, list) else []):
        nic = gpu.get("nearest_nic") if isinstance(gpu, dict) else None
        if not isinstance(nic, dict) or not isinstance(nic.get("rdma_device"), str):
            continue
        relation = nic.get("relation")
        rank = RELATIONS.index(relation) if relation in RELATIONS else len(RELATIONS)
        if nic["rdma_device"] not in best or rank < best[nic["rdma_device"]][0]:
            best[nic["rdma_device"]] = (rank, index)
    return {device: index for device, (rank, index) in best.items()}


def _settings(params: Mapping[str, Any]) -> _Settings:
    values = dict(DEFAULTS)
    values.update({name: params[name] for name in DEFAULTS if name in params})
    for name in ("rdma_bandwidth", "rdma_bandwidth_cuda"):
        if not isinstance(values[name], bool):
            raise ValueError("%s must be true or false, not %r" % (name, values[name]))
    duration = values["rdma_bandwidth_duration_s"]
    if not is_number(duration) or duration < 1 or float(duration) != int(duration):
        raise ValueError("rdma_bandwidth_duration_s must be a whole number of seconds >= 1 (ib_write_bw -D takes an "
                         "integer), not %r" % duration)
    size = values["rdma_bandwidth_message_bytes"]
    if not is_number(size) or float(size) != int(size) or not 1 <= size <= MAX_MESSAGE_BYTES:
        raise ValueError("rdma_bandwidth_message_bytes must be an integer from 1 to %d (ib_write_bw -s), not %r"
                         % (MAX_MESSAGE_BYTES, size))
    return _Settings(values["rdma_bandwidth"], int(duration), int(size), values["rdma_bandwidth_cuda"])


class _Runner:
    """The runs of one section: which ports and memories, the argv of each, and what each gave."""

    def __init__(self, tool: Dict[str, Any], settings: _Settings, gpu_count: Any, nearest_gpu: Mapping[str, int],
                 popen: Callable[..., Any], roots: SystemRoots, limits: PairLimits, budget_s: float) -> None:
        self.tool_path = tool["path"]
        self.settings = settings
        self.gpu_count = gpu_count if is_number(gpu_count) else 0
        self.cuda = settings.cuda and tool.get("cuda_capable") is True and self.gpu_count > 0
        self.nearest_gpu = nearest_gpu
        self.popen = popen
        self.roots = roots
        self.limits = limits
        self.budget_s = budget_s
        self.end = time.monotonic() + budget_s

    def device_runs(self, device: Dict[str, Any]) -> List[Dict[str, Any]]:
        name = device.get("name")
        ports = device.get("ports")
        if not isinstance(name, str) or not _DEVICE_NAME.match(name):
            return [self._not_run(str(name), None, "host", None, "%r is not an RDMA device name: not measured" % (name,))]
        if not isinstance(ports, list):
            why = ports["unavailable"] if is_unavailable(ports) else "no ports list"
            return [self._not_run(name, None, "host", None, "its ports could not be read (%s): not measured" % why)]
        runs = []
        for port in ports:
            for memory, gpu_index in self._memories(name):
                runs.append(self._port_run(name, port, memory, gpu_index))
        return runs

    def _memories(self, device: str) -> List[Any]:
        memories: List[Any] = [("host", None)]
        if self.cuda:
            nearest = self.nearest_gpu.get(device)
            usable = isinstance(nearest, int) and not isinstance(nearest, bool) and 0 <= nearest < self.gpu_count
            memories.append(("cuda", nearest if usable else 0))
        return memories

    def _port_run(self, device: str, port: Dict[str, Any], memory: str, gpu_index: Optional[int]) -> Dict[str, Any]:
        number = port.get("port")
        if not isinstance(number, int) or isinstance(number, bool) or number < 1:
            return self._not_run(device, None, memory, gpu_index, "the port number %r is not usable: not measured" % (number,))
        state = port.get("state")
        if state != "ACTIVE":
            shown = "unreadable (%s)" % state["unavailable"] if is_unavailable(state) else state
            return self._not_run(device, number, memory, gpu_index, "port %d is %s, not ACTIVE: not measured" % (number, shown))
        return self._measure(device, number, port.get("link_layer"), memory, gpu_index)

    def _measure(self, device: str, port: int, link_layer: Any, memory: str, gpu_index: Optional[int]) -> Dict[str, Any]:
        entry = self._entry(device, port, memory, gpu_index)
        left_s = self.end - time.monotonic()
        if left_s < self.settings.duration_s + BUDGET_START_S:
            entry["not_run"] = ("not started: %.0f s of the rdma_bandwidth time budget of %g s were left, less than the run "
                                "needs (%d s and its start)" % (max(left_s, 0.0), self.budget_s, self.settings.duration_s))
            return entry
        gid_index = roce_gid_index(self.roots.sys, device, port) if link_layer == "Ethernet" else None
        tcp_port = free_tcp_port()
        server = build_argv(self.tool_path, device, port, tcp_port, self.settings.duration_s, self.settings.message_bytes,
                            gid_index, gpu_index)
        client = server + [LOOPBACK_ADDRESS]
        env = None
        if memory == "cuda":
            env = dict(os.environ)
            env.update(CUDA_ENVIRONMENT)
        outcome = run_pair(server, client, lambda: tcp_port_listening(self.roots.proc, tcp_port), self.settings.duration_s,
                           self.limits, popen=self.popen, env=env, budget_s=left_s)
        if outcome.error is not None:
            entry["error"] = outcome.error
            return entry
        report = parse_bandwidth(outcome.client_stdout)
        if report is None:
            entry["error"] = ("the ib_write_bw client ended with status 0 but printed no bandwidth line under perftest's results "
                              "header (#bytes #iterations BW peak[Gb/sec] BW average[Gb/sec] MsgRate[Mpps])")
            return entry
        entry["bandwidth_gbitps"] = report["average_gbps"]
        entry["bandwidth_peak_gbitps"] = report["peak_gbps"] if report["peak_gbps"] > 0 else unavailable(PEAK_IN_DURATION_MODE)
        return entry

    def _entry(self, device: str, port: Optional[int], memory: str, gpu_index: Optional[int]) -> Dict[str, Any]:
        return {"rdma_device": device, "port": port, "memory": memory, "gpu_index": gpu_index, "mode": MODE,
                "message_bytes": self.settings.message_bytes, "duration_s": self.settings.duration_s}

    def _not_run(self, device: str, port: Optional[int], memory: str, gpu_index: Optional[int], why: str) -> Dict[str, Any]:
        entry = self._entry(device, port, memory, gpu_index)
        entry["not_run"] = why
        return entry


def build_argv(tool_path: str, device: str, port: int, tcp_port: int, duration_s: int, message_bytes: int,
               gid_index: Optional[int], gpu_index: Optional[int]) -> List[str]:
    """The server's argv (the client's adds the server's address): every option and every value its own word."""
    argv = [tool_path, "-d", device, "-i", str(port), "-p", str(tcp_port), "--report_gbits", "-D", str(duration_s),
            "-s", str(message_bytes), "-F"]
    if gid_index is not None:
        argv += ["-x", str(gid_index)]
    if gpu_index is not None:
        argv += ["--use_cuda", str(gpu_index)]
    return argv
