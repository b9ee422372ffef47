"""fabric probe: the node's network from sysfs and procfs, without vendor tools: RDMA devices and their ports, network
interfaces, each GPU's nearest RDMA device, GPUDirect RDMA's ways in, and RDMA bandwidth where perftest is installed."""
from __future__ import annotations

import sys
from typing import Any, Callable, Dict, Optional

from probe_packages.fabric.ethernet import rdma_netdevs, read_interfaces
from probe_packages.fabric.gpudirect import read_gpudirect
from probe_packages.fabric.gpus import read_gpus
from probe_packages.fabric.infiniband import read_rdma_devices
from probe_packages.fabric.nearest_nic import with_nearest_nics
from probe_packages.fabric.net_kind import DriverName, ethtool_driver
from probelib import outcome
from probelib.fields import SectionErrors, is_unavailable
from probelib.runner import ProbeResult, main
from probelib.system.roots import SystemRoots

DESCRIPTION = (
    "Record the node's network from sysfs and procfs only: every RDMA device (/sys/class/infiniband: HCA type, board "
    "id, firmware, GUIDs, PCI address, NUMA node, PCIe path) and each port's state, physical state, rate, link layer, "
    "LID, GID count and error counters; every network interface but lo (/sys/class/net: operstate, carrier, speed, "
    "MTU, driver, PCI address, virtual or not and its kind, carrier changes, its RDMA device); each NVIDIA GPU's "
    "nearest RDMA device by PCIe switch, root port and NUMA node; nvidia_peermem and the dma-buf path; and, where "
    "ib_write_bw (perftest) is installed and rdma_bandwidth is on, each RDMA device's bandwidth."
)
MeasureRdma = Callable[..., Dict[str, Any]]
NearestGpu = Callable[[Any], Dict[str, int]]


def measure_bandwidth(rdma_devices: Any, gpus: Any, params: Dict[str, Any], roots: SystemRoots,
                      measure_rdma: Optional[MeasureRdma], nearest_gpu_of: Optional[NearestGpu]) -> Dict[str, Any]:
    """data.rdma_bandwidth: probe_packages.fabric.rdma_bandwidth's measure_rdma_bandwidth (Contract 2), told which GPU is
    nearest each RDMA device by its nearest_gpu_by_device, unless tests give their own."""
    if measure_rdma is None:
        from probe_packages.fabric.rdma_bandwidth import measure_rdma_bandwidth, nearest_gpu_by_device  # pylint: disable=import-outside-toplevel
        measure_rdma, nearest_gpu_of = measure_rdma_bandwidth, nearest_gpu_by_device
    gpu_count = len(gpus) if isinstance(gpus, list) else 0
    nearest = nearest_gpu_of(gpus) if nearest_gpu_of is not None else None
    return measure_rdma(rdma_devices, gpu_count, params, nearest_gpu=nearest, roots=roots)


def collect(params: Dict[str, Any], roots: Optional[SystemRoots] = None, driver_name: DriverName = ethtool_driver,
            measure_rdma: Optional[MeasureRdma] = None, nearest_gpu_of: Optional[NearestGpu] = None) -> ProbeResult:
    """roots: where /proc and /sys are read (tests give recorded trees); driver_name: a virtual interface's driver
    (ETHTOOL_GDRVINFO on the host); measure_rdma, nearest_gpu_of: probe_packages.fabric.rdma_bandwidth's
    measure_rdma_bandwidth and nearest_gpu_by_device unless given."""
    roots = roots or SystemRoots()
    errors = SectionErrors()
    rdma_devices = errors.run("rdma_devices", lambda: read_rdma_devices(roots.sys))
    netdevs = rdma_netdevs(rdma_devices) if isinstance(rdma_devices, list) else {}
    ethernet = errors.run("ethernet", lambda: read_interfaces(roots.sys, netdevs, driver_name))
    gpus = errors.run("gpus", lambda: with_nearest_nics(read_gpus(roots.sys), rdma_devices))
    gpudirect = errors.run("gpudirect", lambda: read_gpudirect(roots.proc, roots.sys))
    bandwidth = errors.run("rdma_bandwidth", lambda: measure_bandwidth(rdma_devices, gpus, params, roots, measure_rdma, nearest_gpu_of))
    data = {"rdma_devices": rdma_devices, "ethernet": ethernet, "gpus": gpus, "gpudirect": gpudirect,
            "rdma_bandwidth": bandwidth, "errors": errors.errors}
    measured = not all(is_unavailable(section) for section in (rdma_devices, ethernet, gpus, gpudirect))
    status, reason = outcome.decide(errors.errors, lambda error: "%s (%s)" % (error["section"], error["error"]), measured,
                                    "sections that failed: ", separator=", ")
    return ProbeResult(status, data, reason)


if __name__ == "__main__":
    sys.exit(main("fabric", DESCRIPTION, collect))
