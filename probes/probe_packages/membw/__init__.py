"""The parts of the membw probe: the plan, the copy benchmark, the cache size, the GPU state, one device's run."""
