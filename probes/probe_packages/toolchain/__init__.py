"""The toolchain probe's library: one contract per module (pure decisions), the fresh-process readers, NVML's side."""
