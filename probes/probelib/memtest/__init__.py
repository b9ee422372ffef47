"""memtest: device memory pattern tests (walking ones and zeros, address-in-address, seeded random) on every GPU at once, with NVML ECC and remapped-row counters read before and after."""
