"""hostbw's together worker: one process per worker copies between pinned host memory and its GPU while every other
worker does the same, so that GPUs sharing a PCIe uplink (and workers sharing a GPU) compete as they do in training.

Each worker pins itself to its GPU's NUMA-local CPUs (as the alone phase does), takes the plan's buffer size bounded by
its share of the host's and the GPU's free memory, fills a pinned host buffer, waits at the common start line, then
times the plan's repeats of pinned H2D and then pinned D2H (GpuCopies, CUDA events), exactly as the alone phase does.
On the CPU path it times the alone phase's host-to-host copy.
"""
from __future__ import annotations

from typing import Any, Callable, Dict, List

from probe_packages.hostbw.copies import CPU_NOTE, GpuCopies, measure_cpu
from probe_packages.hostbw.numa import pinned_thread
from probe_packages.hostbw.sizing import choose_buffer
from probelib.fields import is_unavailable, unavailable
from probelib.measure.devices import free_memory_bytes
from probelib.measure.phases import memory_share

TASK = "probe_packages.hostbw.together:copy_worker"
IDENTITY = ("kind", "index", "name", "uuid")
PLACE = ("pci_bus_id", "numa_node", "pcie_path")
HOST = {"kind": "cpu"}
NO_GPU = "no GPU: the CPU path copies host to host, it has no pinned H2D or D2H"
DIRECTIONS = ("h2d", "d2h")


def direction_record(result: Dict[str, Any]) -> Dict[str, Any]:
    """The parts of a copy result (copies._result) a together worker keeps."""
    return {key: result[key] for key in ("median_gbps", "repeats_gbps", "cv_pct", "data_check") if key in result}


def copy_worker(device: Dict[str, Any], worker: Dict[str, Any], args: Dict[str, Any],
                start: Callable[[], float]) -> Dict[str, Any]:
    """The together runner's task (see the module). args: plan, check_elements, workers (how many in all),
    places {device index: {cpus, note, pci_bus_id, numa_node, pcie_path}}, uplinks {worker: {uplink_sharers,
    uplink_bridge, uplink_gpus}}. The result names the device and its place, and the workers sharing its uplink."""
    import torch  # pylint: disable=import-outside-toplevel

    plan = args["plan"]
    host_share = memory_share(free_memory_bytes(torch, HOST), args["workers"])
    place = args["places"][str(device["index"])]
    uplink = dict(args["uplinks"][str(worker["worker"])], device={key: device.get(key) for key in IDENTITY},
                  place={key: place[key] for key in PLACE if key in place})
    if device["kind"] != "cuda":
        buffer = choose_buffer(plan["buffer_mib_requested"], host_share, 2)
        (result,) = measure_cpu(torch, device, plan, buffer["bytes"], args["check_elements"], start)
        if "error" in result:
            raise RuntimeError(result["error"])
        no_gpu = unavailable(NO_GPU)
        return dict(uplink, size_mib=buffer["used_mib"], h2d_pinned_gbps=no_gpu, d2h_pinned_gbps=no_gpu,
                    h2h_gbps=result["median_gbps"], h2h=direction_record(result), buffer=buffer, note=CPU_NOTE)
    with pinned_thread(place["cpus"]) as pinning:
        with torch.cuda.device(device["index"]):
            buffer = choose_buffer(plan["buffer_mib_requested"], host_share, 1,
                                   memory_share(free_memory_bytes(torch, device), worker["workers_on_device"]), 2)
            copies = GpuCopies(torch, device, plan, buffer["bytes"], args["check_elements"])
            host = copies.host_buffer(True)
            start()
            results = {"h2d": copies.h2d(host, True), "d2h": copies.d2h(host, True)}
            del host, copies
            torch.cuda.empty_cache()
    numa = {"pinned": pinning["pinned"], "note": ("not pinned: %s" % pinning["error"]) if pinning["error"] else place["note"]}
    return dict(uplink, size_mib=buffer["used_mib"], h2d_pinned_gbps=results["h2d"]["median_gbps"],
                d2h_pinned_gbps=results["d2h"]["median_gbps"], h2d=direction_record(results["h2d"]),
                d2h=direction_record(results["d2h"]), buffer=buffer, numa=numa)


def alone_reference(entry: Any) -> Dict[str, Any]:
    """The first alone device's pinned H2D and D2H medians (the CPU path: its host-to-host copy) and buffer size."""
    if not isinstance(entry, dict) or "results" not in entry:
        why = entry.get("error") if isinstance(entry, dict) else None
        return unavailable("no alone reference: the alone phase measured nothing%s" % (": %s" % why if why else ""))
    found: Dict[str, Any] = {"device_index": entry.get("index"), "size_mib": entry.get("buffer", {}).get("used_mib")}
    results: List[Dict[str, Any]] = [result for result in entry["results"] if isinstance(result, dict)]
    for direction in DIRECTIONS:
        value = next((result.get("median_gbps") for result in results
                      if result.get("direction") == direction and result.get("host_memory") == "pinned"), None)
        if value is None:
            value = unavailable(NO_GPU if entry.get("kind") != "cuda" else "the alone phase's pinned %s failed" % direction)
        found["%s_pinned_gbps" % direction] = value
    if entry.get("kind") != "cuda":
        value = next((result.get("median_gbps") for result in results if result.get("direction") == "h2h"), None)
        found["h2h_gbps"] = value if value is not None else unavailable("the alone phase's host-to-host copy failed")
    return found


def data_check_errors(record: Any) -> List[Dict[str, str]]:
    """{device, error} of each ok worker whose copied data differ from their source."""
    errors = []
    for worker in record.get("workers", []) if isinstance(record, dict) else []:
        result = worker.get("result") if isinstance(worker.get("result"), dict) else {}
        for direction in DIRECTIONS + ("h2h",):
            check = result.get(direction, {}).get("data_check") if isinstance(result.get(direction), dict) else None
            if isinstance(check, dict) and not is_unavailable(check) and check.get("ok") is False:
                errors.append({"device": "%s:%d" % (worker["kind"], worker["device_index"]),
                               "error": "together worker %d: %s data check failed: %d of %d sampled elements differ" % (
                                   worker["worker"], direction, check["mismatched_elements"], check["checked_elements"])})
    return errors
