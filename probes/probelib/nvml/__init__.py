"""NVML, shared by every probe that reads the driver: the session and its errors as reasons, which GPU an index is, its
clock-event reasons, processes and NVLinks, the GPU-pair topology (else `nvidia-smi topo -m`) and one sample of a GPU.
Standard library only at import time (nvidia-ml-py where it imports)."""
