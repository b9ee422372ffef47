"""hostbw's together phase: where each GPU sits (its NUMA CPUs, the root port above it), which workers share an uplink,
a copy worker on every GPU at once (probelib.measure.together), and the alone phase's pinned rates as the reference."""
from __future__ import annotations

import dataclasses
from typing import Any, Dict, List

from probe_packages.hostbw.numa import allowed_cpus, choose_cpus, gpu_bus_id, read_locality
from probe_packages.hostbw.together import TASK, alone_reference
from probe_packages.hostbw.uplinks import pcie_path, sharing, uplink_bridge
from probelib.fields import unavailable
from probelib.measure.together import not_needed, plan_workers, run_together

# Each worker imports torch, starts CUDA and fills a pinned buffer before the start line (seconds), then times
# `repeats` x `iterations` copies per direction, slower by the workers sharing its uplink: minutes are far beyond it.
DEADLINE_S = 240.0


def place_of(torch: Any, device: Dict[str, Any], snapshots: Any, numa_pin: bool) -> Dict[str, Any]:
    """The device's index, PCI bus id, NUMA CPUs to pin to (None: not pinned) with why, PCIe path and uplink."""
    place: Dict[str, Any] = {"index": device["index"]}
    if device["kind"] != "cuda":
        no_gpu = unavailable("no GPU")
        place.update(pci_bus_id=no_gpu, pcie_path=no_gpu, uplink_bridge=no_gpu, cpus=None,
                     note="no GPU: nothing to be local to")
        return place
    bus_id, unused_source = gpu_bus_id(torch, device, snapshots)
    locality = read_locality(bus_id)
    if numa_pin:
        cpus, note = choose_cpus(locality["numa_node"], locality["local_cpulist"], allowed_cpus())
    else:
        cpus, note = None, "not pinned: the numa_pin parameter is false"
    path = pcie_path(bus_id)
    place.update(pci_bus_id=bus_id, numa_node=locality["numa_node"], pcie_path=path, uplink_bridge=uplink_bridge(path),
                 cpus=cpus, note=note)
    return place


def together_phase(torch: Any, devices: List[Dict[str, Any]], alone_entries: List[Dict[str, Any]], plan: Dict[str, Any],
                   params: Dict[str, Any], snapshots: Any) -> Dict[str, Any]:
    """data["together"]: unavailable with the reason when fewer than two workers would run, else the runner's record
    with the alone reference; each worker's result names its device, its place and the workers sharing its uplink."""
    workers = plan_workers(devices, params["workers_per_gpu"])
    reason = not_needed(workers)
    if reason is not None:
        return unavailable(reason)
    places = [place_of(torch, device, snapshots, params["numa_pin"]) for device in devices]
    shared = sharing([dataclasses.asdict(worker) for worker in workers], {place["index"]: place["uplink_bridge"] for place in places})
    args = {"plan": plan, "check_elements": params["check_elements"], "workers": len(workers),
            "places": {str(place["index"]): place for place in places},
            "uplinks": {str(worker): found for worker, found in shared.items()}}
    record = run_together(TASK, args, workers, DEADLINE_S, devices)
    record["alone_reference"] = alone_reference(alone_entries[0]) if alone_entries else unavailable("no device was measured alone")
    return record
