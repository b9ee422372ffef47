"""The fabric probe's library: RDMA devices and their ports, network interfaces, each GPU's nearest NIC, GPUDirect."""
