"""gemm: matmul throughput per dtype over shapes, each on the roofline, burst and sustained at the power limit.

Its roofline needs the memory bandwidth membw measured on each GPU and the dense peak of each dtype from the SKU's
baseline: both are derived on the controller from this run's stored results. A parameter the user gave in the
inventory always wins; when nothing can be derived the probe measures or calibrates itself."""
