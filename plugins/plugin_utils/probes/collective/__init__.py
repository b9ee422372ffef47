"""collective: the all-reduce across the host's GPUs, swept over message sizes."""
