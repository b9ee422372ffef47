"""How long gemm's burst needs the GPU idle before each window: the burst method of the probe at several idle holds.

    python3 benchmarks/burst_idle_hold.py [--holds 1 2 3 5] [--windows 4] [--dtypes bf16 fp8_e4m3] [--preload-s 2]
                                          [--out FILE]

For each dtype and hold, as the gemm probe does after its sweep of a dtype: --preload-s of back-to-back products of
the calibration shape (the sweep's heat), then the probe's own burst method (probe_packages.gemm.power_run, retries off) for
--windows windows, each after the GPU has drawn at most 30 % of its power limit for the hold. Per hold it prints the
windows whose NVML samples saw the software power cap, the median and spread of their TFLOP/s, and the time the holds
took. A hold is long enough where no window reached the cap and the median stays within the 5 s hold's spread.
Reads only; sets nothing. Needs torch and nvidia-ml-py on a GPU.
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), os.pardir, "probes"))

from probe_packages.gemm.cases import build_plan  # noqa: E402  (after the path above)
from probe_packages.gemm.dtypes import DTYPES  # noqa: E402
from probe_packages.gemm.operations import build_operation, matmul_precision  # noqa: E402
from probe_packages.gemm.power_run import PowerStateRun  # noqa: E402
from probe_packages.gemm.together_worker import NvmlSide  # noqa: E402
from probelib.measure.devices import measured_devices  # noqa: E402

SETTINGS = {"sampling_interval_s": 0.01, "burst_warmup_calls": 3, "idle_power_fraction": 0.3, "burst_retries": 0,
            "burst_window_s": 0.05, "sustained_settle_s": 3.0, "sustained_window_s": 1.0, "idle_wait_max_s": 30.0}


def run_hold(torch, device, case, dtype: str, hold_s: float, windows: int, preload_s: float):
    spec = DTYPES[dtype]
    nvml = NvmlSide(device)
    try:
        with matmul_precision(torch, spec):
            operation = build_operation(torch, spec, case, device["torch_device"], False)
            began = time.monotonic()
            while time.monotonic() - began < preload_s:
                for unused_call in range(20):
                    operation()
                torch.cuda.synchronize()
            run = PowerStateRun(torch, device, case, nvml.reads, dict(SETTINGS, burst_idle_hold_s=hold_s))
            began = time.monotonic()
            result = run.burst(operation, windows)
            took_s = time.monotonic() - began
    finally:
        nvml.close()
    rows = result["windows"]
    capped = [bool(isinstance(row["state"], dict) and row["state"].get("power_cap_reached")) for row in rows]
    rates = [float(row["tflops"]) for row in rows]
    return {"dtype": dtype, "hold_s": hold_s, "windows": len(rows), "capped_windows": sum(capped),
            "tflops": rates, "tflops_median": statistics.median(rates),
            "spread_pct": 100.0 * (max(rates) - min(rates)) / statistics.median(rates),
            "waited_s": [row["idle_before"]["waited_s"] for row in rows], "burst_s": round(took_s, 2)}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--holds", type=float, nargs="+", default=[1.0, 2.0, 3.0, 5.0])
    parser.add_argument("--windows", type=int, default=4)
    parser.add_argument("--dtypes", nargs="+", default=["bf16", "fp8_e4m3"])
    parser.add_argument("--preload-s", type=float, default=2.0)
    parser.add_argument("--out")
    args = parser.parse_args()
    import torch

    devices = measured_devices(torch, "cuda")
    if not devices:
        print("no CUDA GPU is visible to torch: nothing to measure")
        return 1
    device = devices[0]
    case = build_plan("cuda", False, args.dtypes)["calibration_case"]
    rows = [run_hold(torch, device, case, dtype, hold, args.windows, args.preload_s)
            for dtype in args.dtypes for hold in args.holds]
    print("%s, %s (%dx%dx%d), %d windows per hold after %.1f s of products" % (
        device.get("name"), case.name, case.m, case.n, case.k, args.windows, args.preload_s))
    print("| dtype | idle hold s | windows at the power cap | median TFLOP/s | spread % | burst s |")
    print("| --- | ---: | ---: | ---: | ---: | ---: |")
    for row in rows:
        cells = (row["dtype"], row["hold_s"], row["capped_windows"], row["windows"], row["tflops_median"],
                 row["spread_pct"], row["burst_s"])
        print("| %s | %.1f | %d of %d | %.1f | %.2f | %.1f |" % cells)
    if args.out:
        partial = args.out + ".partial"
        with open(partial, "w", encoding="utf-8") as handle:
            json.dump({"device": {key: device.get(key) for key in ("name", "uuid", "index")}, "rows": rows}, handle, indent=1)
        os.replace(partial, args.out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
