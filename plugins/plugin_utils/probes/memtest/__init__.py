"""memtest: device memory pattern tests on every GPU at once, with the ECC and remapped-row counters before and after."""
