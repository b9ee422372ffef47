"""fabric: its metric catalogue."""
from __future__ import annotations

from ...probe_kit.kit import MetricSpec

_NOT_COMPARED = ("not compared between runs: no run on real InfiniBand is recorded yet to measure its run-to-run spread "
                 "(the 1-GPU rig has no RDMA device); the floor per port rate (fabric.rdma_bandwidth) judges each run")
# The slowest NIC's loopback write bandwidth of each memory kind: one number per host, so hosts compare like with like.
RDMA_WRITE_CUDA = MetricSpec("fabric.rdma_write_cuda_gbitps", "Slowest NIC's RDMA write (GPU memory)", "Gb/s", "higher",
                             drift_tolerance=None, drift_source=_NOT_COMPARED)
RDMA_WRITE_HOST = MetricSpec("fabric.rdma_write_host_gbitps", "Slowest NIC's RDMA write (host memory)", "Gb/s", "higher",
                             drift_tolerance=None, drift_source=_NOT_COMPARED)
METRICS = (RDMA_WRITE_CUDA, RDMA_WRITE_HOST)
