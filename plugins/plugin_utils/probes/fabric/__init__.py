"""fabric: the node's network from sysfs (InfiniBand/RoCE ports, HCA firmware, Ethernet, GPU to NIC affinity, GPUDirect RDMA, RDMA bandwidth)."""
