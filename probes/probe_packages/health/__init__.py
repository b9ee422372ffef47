"""The sections of the health probe, one job per module; standard library only at import time. What other probes read
too (NVML, the topology, sysfs) lives in the shared probelib/nvml/ and probelib/system/."""
