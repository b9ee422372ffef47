"""fabric: how it runs (light: read for every host before its probes run)."""
from __future__ import annotations

from ...probe_kit.kit import ProbeRun

RUN = ProbeRun(
    name="fabric",
    # after tuning (15): both read sysfs; before the bandwidth probes, so ib_write_bw never follows sustained load
    run_order=16,
    # the sysfs reads take milliseconds (docs/fabric.md); ib_write_bw's runs share a 240 s budget
    # (probe_packages/fabric/rdma_bandwidth.py), so a hung run costs the section, never the probe's other data
    timeout_s=300,
    # quick records the devices without measuring bandwidth (the sysfs read takes well under a second)
    profiles={"acceptance": {}, "full": {}, "post_upgrade": {}, "interconnect": {}, "quick": {"rdma_bandwidth": False}},
    needs_gpu=False,
    summary="RDMA ports (state, rate, counters), network interfaces, each GPU's nearest NIC, GPUDirect RDMA, RDMA bandwidth",
    # sysfs reads only, without ib_write_bw's traffic
    disturbs_job=False,
    quiet_params={"rdma_bandwidth": False},
)
