"""What the measurement probes share: the per-GPU opening, which devices to measure, timing on them and iterations per
point, a GPU state snapshot, the NVML sampler, the device's last-level cache."""
