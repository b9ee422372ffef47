"""The parts of the memtest probe: the plan, the patterns, one pass, one worker, the NVML counters, one device's entry."""
