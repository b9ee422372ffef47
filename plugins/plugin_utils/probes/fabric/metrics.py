"""fabric: its metric catalogue."""
from __future__ import annotations

from ...probe_kit.kit import MetricSpec

_NOT_COMPARED = ("not compared between runs: no run on real InfiniBand is recorded yet to measure its run-to-run spread "
                 "(the 1-GPU rig has no RDMA device); the floor per port rate (fabric.rdma_bandwidth) judges each run")
# Each port's loopback write bandwidth of each memory kind, keyed by the port ("mlx5_0/1"): the fleet compares every
# port with its group's ports, as it does GPUs.
RDMA_WRITE_CUDA = MetricSpec("fabric.rdma_write_cuda_gbitps", "RDMA write per port (GPU memory)", "Gb/s", "higher",
                             drift_tolerance=None, drift_source=_NOT_COMPARED, device_kind="rdma_port")
RDMA_WRITE_HOST = MetricSpec("fabric.rdma_write_host_gbitps", "RDMA write per port (host memory)", "Gb/s", "higher",
                             drift_tolerance=None, drift_source=_NOT_COMPARED, device_kind="rdma_port")
METRICS = (RDMA_WRITE_CUDA, RDMA_WRITE_HOST)
