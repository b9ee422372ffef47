"""One device's measurement: find where its PCIe lives, pin there, size the buffers, copy, and describe it all."""
from __future__ import annotations

import os
import traceback
from typing import Any, Dict, List, Tuple

from probe_packages.hostbw.copies import measure_cpu, measure_gpu
from probe_packages.hostbw.numa import allowed_cpus, choose_cpus, gpu_bus_id, pinned_thread, read_locality
from probe_packages.hostbw.pcie import percent_of_link, read_link
from probe_packages.hostbw.sizing import choose_buffer
from probelib.fields import is_unavailable, unavailable
from probelib.measure.devices import free_memory_bytes

IDENTITY = ("kind", "index", "name", "uuid")
HOST = {"kind": "cpu"}


def identity_of(device: Dict[str, Any]) -> Dict[str, Any]:
    return {key: device[key] for key in IDENTITY}


def empty_pinned_cache(torch: Any) -> Any:
    """Release pinned buffers torch keeps cached, so the next GPU's buffers are first touched on its own node."""
    for owner, name in ((getattr(torch, "accelerator", None), "empty_host_cache"), (torch._C, "_host_emptyCache")):
        function = getattr(owner, name, None) if owner is not None else None
        if function is not None:
            try:
                function()
            except Exception as exc:  # a backend that cannot do it is reported, not fatal
                return unavailable("%s.%s() failed: %s: %s" % (getattr(owner, "__name__", "torch"), name, type(exc).__name__, exc))
            return True
    return unavailable("this torch %s cannot release cached pinned memory; a later GPU may reuse pages of an earlier one's node"
                       % getattr(torch, "__version__", "?"))


def run_device(torch: Any, device: Dict[str, Any], plan: Dict[str, Any], params: Dict[str, Any],
               snapshots: Any) -> Tuple[Dict[str, Any], List[Dict[str, str]]]:
    """(the device's entry in data.devices, its errors); a device that fails records its error and returns."""
    try:
        if device["kind"] == "cuda":
            entry = _run_gpu(torch, device, plan, params, snapshots)
        else:
            entry = _run_cpu(torch, device, plan, params)
    except Exception as exc:  # the other devices still run
        entry = identity_of(device)
        entry["error"] = "%s: %s" % (type(exc).__name__, exc)
        entry["traceback"] = traceback.format_exc(limit=12)[-3000:]
        return entry, [{"device": device["torch_device"], "what": "device", "error": entry["error"]}]
    return entry, errors_of(device["torch_device"], entry["results"])


def errors_of(device_name: str, results: List[Dict[str, Any]]) -> List[Dict[str, str]]:
    """A failed copy and a copy whose data check found differences are errors."""
    errors = []
    for result in results:
        what = "%s %s" % (result["direction"], result["host_memory"])
        if "error" in result:
            errors.append({"device": device_name, "what": what, "error": result["error"]})
        elif not result["data_check"]["ok"]:
            check = result["data_check"]
            errors.append({"device": device_name, "what": what, "error": "data check failed: %d of %d sampled elements differ"
                           % (check["mismatched_elements"], check["checked_elements"])})
    return errors


def _run_gpu(torch: Any, device: Dict[str, Any], plan: Dict[str, Any], params: Dict[str, Any],
             snapshots: Any) -> Dict[str, Any]:
    bus_id, source = gpu_bus_id(torch, device, snapshots)
    locality: Dict[str, Any] = {"pci_bus_id": bus_id, "pci_bus_id_source": source}
    locality.update(read_locality(bus_id))
    if params["numa_pin"]:
        cpus, note = choose_cpus(locality["numa_node"], locality["local_cpulist"], allowed_cpus())
    else:
        cpus, note = None, "not pinned: the numa_pin parameter is false"
    entry = identity_of(device)
    entry["gpu_state_before"] = snapshots.take(device["uuid"]) if snapshots is not None else unavailable("NVML was not opened")
    link = read_link(snapshots, device["uuid"], "max")
    with pinned_thread(cpus) as outcome:
        if outcome["error"]:
            note = "not pinned: %s" % outcome["error"]
        locality.update(cpus_used=sorted(os.sched_getaffinity(0)), pinned=outcome["pinned"], note=note,
                        pinned_cache_emptied=empty_pinned_cache(torch))
        with torch.cuda.device(device["index"]):
            host_buffers = 2 if plan["bidirectional"] else 1
            buffer = choose_buffer(plan["buffer_mib_requested"], free_memory_bytes(torch, HOST), host_buffers,
                                   free_memory_bytes(torch, device), 2)
            try:
                results, link_after = measure_gpu(torch, device, plan, buffer["bytes"], params["check_elements"],
                                                  lambda: read_link(snapshots, device["uuid"], "current"))
            finally:
                torch.cuda.synchronize(device["index"])
                torch.cuda.empty_cache()
                empty_pinned_cache(torch)
    raw = link.get("link_raw_gbps") if not is_unavailable(link) else link
    for result in results:
        if "error" not in result:
            result["pct_of_link_raw"] = percent_of_link(result, raw)
    if not is_unavailable(link):
        link["after_pinned_copies"] = link_after if link_after is not None else unavailable("no pinned copy ran")
    entry.update(locality=locality, buffer=buffer, pcie=link, results=results)
    return entry


def _run_cpu(torch: Any, device: Dict[str, Any], plan: Dict[str, Any], params: Dict[str, Any]) -> Dict[str, Any]:
    entry = identity_of(device)
    not_gpu = unavailable("no GPU")
    entry["gpu_state_before"] = not_gpu
    entry["locality"] = {"pci_bus_id": not_gpu, "pci_bus_id_source": "none", "numa_node": not_gpu,
                         "local_cpulist": not_gpu, "cpus_used": sorted(os.sched_getaffinity(0)), "pinned": False,
                         "note": "no GPU: nothing to be local to; the copy ran on every CPU allowed to the probe",
                         "pinned_cache_emptied": not_gpu}
    buffer = choose_buffer(plan["buffer_mib_requested"], free_memory_bytes(torch, HOST), 2)
    results = measure_cpu(torch, device, plan, buffer["bytes"], params["check_elements"])
    for result in results:
        if "error" not in result:
            result["pct_of_link_raw"] = unavailable("no GPU: a host-to-host copy crosses no PCIe link")
    entry.update(buffer=buffer, pcie=unavailable("no GPU"), results=results)
    return entry
