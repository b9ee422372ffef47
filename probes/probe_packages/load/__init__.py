"""The load probe's parts: plan, NVML reads, the matmul load, the sampler, and the pure summaries of what was sampled."""
