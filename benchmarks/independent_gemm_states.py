"""Burst and sustained matmul rates measured independently of the gemm probe (plain torch and pynvml, no probe code).

    python3 benchmarks/independent_gemm_states.py [--out FILE] [--gpu 0] [--n 8192] [--repeats 5]

burst: wait (at most 30 s) until the GPU has drawn at most 30 % of its power limit for 5 s in a row, 3 warm-up
products, then products for about 50 ms between CUDA events; repeated --repeats times. sustained: 3 s of products, then
--repeats windows of about 1 s each. bf16 (torch.matmul) and fp8 e4m3 (torch._scaled_mm, per-tensor scales, bf16 out).
NVML's SM clock, power and the power-cap bit are read every 10 ms by a thread. Prints a table and writes JSON with the
driver, the power limit and every repeat, for the baseline's sustained reference. Reads only; sets nothing.
"""
from __future__ import annotations

import argparse
import json
import statistics
import sys
import threading
import time


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out")
    parser.add_argument("--gpu", type=int, default=0)
    parser.add_argument("--n", type=int, default=8192)
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()
    import pynvml
    import torch

    pynvml.nvmlInit()
    handle = pynvml.nvmlDeviceGetHandleByIndex(args.gpu)
    limit_w = pynvml.nvmlDeviceGetEnforcedPowerLimit(handle) / 1000.0
    torch.cuda.set_device(args.gpu)
    n = args.n
    flop = 2.0 * n ** 3
    samples = []
    stop = threading.Event()

    def sample() -> None:
        while not stop.is_set():
            reasons = pynvml.nvmlDeviceGetCurrentClocksEventReasons(handle)
            samples.append((time.monotonic(), pynvml.nvmlDeviceGetClockInfo(handle, 1),
                            pynvml.nvmlDeviceGetPowerUsage(handle) / 1000.0, bool(reasons & 0x4), bool(reasons & 0x1)))
            time.sleep(0.01)

    def operation(dtype):
        # Under the power cap the rate depends on the data's switching activity: N(0, 1) operands as the probe uses
        # (fp8: B stays N(0, 1) and its 1/sqrt(n) goes into the scale; dividing B first would flush most of it to 0 in
        # e4m3 and draw less power).
        a = torch.randn(n, n, device="cuda", dtype=torch.bfloat16)
        if dtype == "bf16":
            b = torch.randn(n, n, device="cuda", dtype=torch.bfloat16) / n ** 0.5
            return lambda: a @ b
        fa = a.to(torch.float8_e4m3fn)
        fb = torch.randn(n, n, device="cuda", dtype=torch.bfloat16).to(torch.float8_e4m3fn).t().contiguous().t()
        one, scale = torch.tensor(1.0, device="cuda"), torch.tensor(1.0 / n ** 0.5, device="cuda")
        return lambda: torch._scaled_mm(fa, fb, scale_a=one, scale_b=scale, out_dtype=torch.bfloat16)

    def seconds_per_call(fn, calls):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        for unused in range(calls):
            fn()
        end.record()
        end.synchronize()
        return start.elapsed_time(end) / 1000.0 / calls

    def state(began, ended):
        inside = [row for row in list(samples) if began <= row[0] <= ended]
        clocks = [row[1] for row in inside]
        return {"samples": len(inside), "sm_clock_mhz_median": statistics.median(clocks) if clocks else None,
                "power_w_median": statistics.median([row[2] for row in inside]) if inside else None,
                "power_capped": any(row[3] for row in inside)}

    def wait_idle(hold_s=5.0, give_up_s=30.0):
        # NVML's power reading trails the load by about a second: one low reading right after a burst does not mean
        # the board has cooled, so the draw must stay low for hold_s in a row.
        began = time.monotonic()
        low_since = None
        while time.monotonic() - began < give_up_s:
            now = time.monotonic()
            if pynvml.nvmlDeviceGetPowerUsage(handle) / 1000.0 <= 0.3 * limit_w:
                low_since = now if low_since is None else low_since
                if now - low_since >= hold_s:
                    break
            else:
                low_since = None
            time.sleep(0.1)
        return time.monotonic() - began

    thread = threading.Thread(target=sample, daemon=True)
    thread.start()
    results = {"driver": pynvml.nvmlSystemGetDriverVersion(), "gpu": pynvml.nvmlDeviceGetName(handle),
               "power_limit_w": limit_w, "n": n, "torch": torch.__version__, "dtypes": {}}
    for dtype in ("bf16", "fp8_e4m3"):
        fn = operation(dtype)
        seconds_per_call(fn, 1)
        bursts = []
        for unused in range(args.repeats):
            waited = wait_idle()
            single = seconds_per_call(fn, 3)
            calls = max(1, int(0.05 // single))
            began = time.monotonic()
            seconds = seconds_per_call(fn, calls)
            bursts.append(dict(tflops=flop / seconds / 1e12, calls=calls, idle_wait_s=round(waited, 2),
                               **state(began, time.monotonic())))
        single = seconds_per_call(fn, 3)
        settle_end = time.monotonic() + 3.0
        while time.monotonic() < settle_end:
            seconds_per_call(fn, max(1, int(0.25 // single)))
        sustained = []
        for unused in range(args.repeats):
            began = time.monotonic()
            seconds = seconds_per_call(fn, max(1, int(1.0 // single)))
            sustained.append(dict(tflops=flop / seconds / 1e12, **state(began, time.monotonic())))
        results["dtypes"][dtype] = {"burst": bursts, "sustained": sustained}
    stop.set()
    thread.join()
    print("| dtype | state | median TFLOP/s | repeats | median SM MHz | power capped in |")
    print("| --- | --- | ---: | --- | ---: | --- |")
    for dtype, states in results["dtypes"].items():
        for name, runs in states.items():
            rates = [run["tflops"] for run in runs]
            clocks = [run["sm_clock_mhz_median"] for run in runs if run["sm_clock_mhz_median"] is not None]
            print("| %s | %s | %.1f | %s | %s | %d of %d |" % (
                dtype, name, statistics.median(rates), ", ".join("%.1f" % rate for rate in rates),
                "%.0f" % statistics.median(clocks) if clocks else "-", sum(run["power_capped"] for run in runs), len(runs)))
    if args.out:
        with open(args.out, "w", encoding="utf-8") as handle_out:
            json.dump(results, handle_out, indent=2)
    pynvml.nvmlShutdown()
    return 0


if __name__ == "__main__":
    sys.exit(main())
