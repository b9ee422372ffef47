"""load: a sustained matmul load per GPU, with clocks, power, temperature and processes sampled."""
