"""Why a sustained bf16 matmul runs slower than a short burst: rate, SM clock, power and throttle reasons over time.

    python3 benchmarks/gemm_power_diagnosis.py [--gpu 0] [--seconds 12] [--n 8192]

First a burst (3 warm-ups, then 10 timed products: the way short published measurements are taken), then
back-to-back products for --seconds, reported per window of about half a second with NVML's SM clock, power
draw and clock-event reasons sampled at the end of each window. Prints a table; needs torch and nvidia-ml-py.
"""
from __future__ import annotations

import argparse
import sys
import time


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--gpu", type=int, default=0)
    parser.add_argument("--seconds", type=float, default=12.0)
    parser.add_argument("--n", type=int, default=8192)
    args = parser.parse_args()
    import pynvml
    import torch

    pynvml.nvmlInit()
    handle = pynvml.nvmlDeviceGetHandleByIndex(args.gpu)
    torch.cuda.set_device(args.gpu)
    n = args.n
    a = torch.randn(n, n, device="cuda", dtype=torch.bfloat16)
    b = torch.randn(n, n, device="cuda", dtype=torch.bfloat16)
    flop = 2 * n ** 3

    def state():
        reasons = pynvml.nvmlDeviceGetCurrentClocksEventReasons(handle)
        names = [name for bit, name in ((0x1, "idle"), (0x4, "sw_power_cap"), (0x8, "hw_slowdown"), (0x20, "sw_thermal"),
                                        (0x40, "hw_thermal"), (0x80, "hw_power_brake")) if reasons & bit]
        return (pynvml.nvmlDeviceGetClockInfo(handle, 1), pynvml.nvmlDeviceGetPowerUsage(handle) / 1000.0,
                pynvml.nvmlDeviceGetTemperature(handle, 0), ",".join(names) or "none")

    def timed(count):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        for unused_call in range(count):
            torch.matmul(a, b)
        end.record()
        end.synchronize()
        return start.elapsed_time(end) / 1000.0

    print("| phase | t s | TFLOP/s | SM MHz | power W | temp C | clock-event reasons |")
    print("| --- | ---: | ---: | ---: | ---: | ---: | --- |")
    time.sleep(5)
    for unused_call in range(3):
        torch.matmul(a, b)
    torch.cuda.synchronize()
    seconds = timed(10)
    print("| burst (10 products after 3 warm-ups) | %.2f | %.1f | %d | %.0f | %d | %s |" % ((seconds, flop * 10 / seconds / 1e12) + state()))
    began = time.monotonic()
    while time.monotonic() - began < args.seconds:
        seconds = timed(50)
        print("| sustained | %.1f | %.1f | %d | %.0f | %d | %s |" % ((time.monotonic() - began, flop * 50 / seconds / 1e12) + state()))
        sys.stdout.flush()
    pynvml.nvmlShutdown()
    return 0


if __name__ == "__main__":
    sys.exit(main())
