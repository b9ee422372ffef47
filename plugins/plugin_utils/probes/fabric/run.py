"""fabric: how it runs (light: read for every host before its probes run)."""
from __future__ import annotations

from ..declaration import ProbeRun

RUN = ProbeRun(
    name="fabric",
    run_order=16,
    timeout_s=300,
    # quick reads sysfs only (the issue puts what takes < 1 s there); ib_write_bw (perftest) adds about
    # rdma_bandwidth_duration_s per NIC and memory kind, so only the longer profiles measure it
    profiles={"quick": {"rdma_bandwidth": False}, "acceptance": {}, "full": {}, "post_upgrade": {}, "interconnect": {}},
    needs_gpu=False,
    summary="InfiniBand/RoCE ports, HCA firmware, Ethernet links, each GPU's nearest NIC, GPUDirect RDMA and RDMA bandwidth",
)
