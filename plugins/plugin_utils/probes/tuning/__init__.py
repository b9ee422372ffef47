"""tuning: the host settings an operator changes (PCIe on every GPU's path, kernel, CPU idle and frequency, memory)."""
