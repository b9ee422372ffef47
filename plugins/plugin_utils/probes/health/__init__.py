"""health: what a node is before anything loads it (device nodes, cgroup, CUDA init, NVML state)."""
