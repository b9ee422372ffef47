"""What the measurement probes share: which devices to measure, timing on them, and a GPU state snapshot."""
