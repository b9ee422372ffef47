"""Plain, independent measurements to hold the probes against (run on the GPU machine beside the playbook).

    python3 benchmarks/independent_measurements.py --out independent.json

Shares no code with the probes: a torch copy loop (device memory bandwidth, bytes read + written), a torch
matmul (bf16 and fp16, 8192 cubed), and pinned host<->device copies (1 GiB), each timed with CUDA events
around many iterations after a warm-up, median of 5 repeats. Prints and writes one JSON object per GPU.
"""
from __future__ import annotations

import argparse
import json
import statistics
import sys


def timed_ms(torch, fn, iterations, warmup=3):
    for unused_call in range(warmup):
        fn()
    torch.cuda.synchronize()
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    for unused_call in range(iterations):
        fn()
    end.record()
    end.synchronize()
    return start.elapsed_time(end) / iterations


def median_of(torch, fn, iterations, repeats=5):
    return statistics.median(timed_ms(torch, fn, iterations) for unused_repeat in range(repeats))


def copy_bandwidth_gbps(torch, device, size_bytes=4 * 2 ** 30):
    src = torch.rand(size_bytes // 4, device=device)
    dst = torch.empty_like(src)
    milliseconds = median_of(torch, lambda: dst.copy_(src), iterations=20)
    return 2 * size_bytes / (milliseconds / 1000) / 1e9


def matmul_tflops(torch, device, dtype, n=8192):
    a = torch.randn(n, n, device=device, dtype=dtype)
    b = torch.randn(n, n, device=device, dtype=dtype)
    milliseconds = median_of(torch, lambda: torch.matmul(a, b), iterations=20)
    return 2 * n ** 3 / (milliseconds / 1000) / 1e12


def host_copy_gbps(torch, device, direction, size_bytes=2 ** 30):
    host = torch.empty(size_bytes, dtype=torch.uint8, pin_memory=True).random_()
    gpu = torch.empty(size_bytes, dtype=torch.uint8, device=device)
    source, destination = (host, gpu) if direction == "h2d" else (gpu, host)

    def operation():
        destination.copy_(source, non_blocking=True)

    milliseconds = median_of(torch, operation, iterations=10)
    return size_bytes / (milliseconds / 1000) / 1e9


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", help="also write the JSON here")
    parser.add_argument("--copy-only", action="store_true", help="only the device copy bandwidth (membw's reference)")
    args = parser.parse_args()
    import torch

    results = []
    for index in range(torch.cuda.device_count()):
        device = torch.device("cuda", index)
        with torch.cuda.device(index):
            row = {"gpu_index": index, "name": torch.cuda.get_device_name(index),
                   "copy_bandwidth_gbps": round(copy_bandwidth_gbps(torch, device), 1)}
            if not args.copy_only:
                row.update({
                    "bf16_8192_tflops": round(matmul_tflops(torch, device, torch.bfloat16), 1),
                    "fp16_8192_tflops": round(matmul_tflops(torch, device, torch.float16), 1),
                    "pinned_h2d_gbps": round(host_copy_gbps(torch, device, "h2d"), 2),
                    "pinned_d2h_gbps": round(host_copy_gbps(torch, device, "d2h"), 2),
                })
            results.append(row)
    text = json.dumps({"torch": torch.__version__, "gpus": results}, indent=2)
    print(text)
    if args.out:
        with open(args.out, "w") as handle:
            handle.write(text + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
