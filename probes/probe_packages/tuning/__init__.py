"""The tuning probe's library: PCI config-space parsing, the PCI tree above each GPU, the kernel's settings."""
