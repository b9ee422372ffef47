"""toolchain: the driver, CUDA, torch and NCCL a workload would see, and whether they agree."""
