"""Benchmark: how long the measurement probes' CPU path takes on this machine (what CI runs), against its target.

    .venv-test/bin/python benchmarks/cpu_path_time.py [--probes gemm membw hostbw]

Runs each probe as the engine does (`python <probe>.py --out FILE`, default parameters) and prints a table: the wall
time the envelope records, the target, and for gemm the slowest dtype's share (the CPU's bf16 has no hardware support
on some x86 parts: on the 2-core AMD EPYC CI machine of 2026-12-01 a 1024^3 bf16 product took 2.3 s, 150 times fp32,
and the gemm CPU path 104 s). Target: 60 s a probe.
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TARGET_S = 60.0


def run(probe: str, directory: str) -> dict:
    out = os.path.join(directory, probe + ".json")
    subprocess.run([sys.executable, os.path.join(ROOT, "probes", probe + ".py"), "--out", out], check=True, timeout=900,
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    with open(out, encoding="utf-8") as handle:
        return json.load(handle)


def dtype_seconds(envelope: dict) -> str:
    """Seconds of timed work per dtype (time per iteration x iterations x repeats), for the gemm row."""
    totals: dict = {}
    for device in envelope["data"].get("devices", []):
        for result in device.get("results", []):
            measured = result.get("measurement") or {}
            if "time_per_iteration_us" in measured:
                seconds = measured["time_per_iteration_us"] * 1e-6 * measured["iterations"] * measured["repeats"]
                totals[result["dtype"]] = totals.get(result["dtype"], 0.0) + seconds
    return ", ".join("%s %.1f s" % item for item in sorted(totals.items())) or "-"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--probes", nargs="+", default=["gemm", "membw", "hostbw"])
    args = parser.parse_args()
    print("| probe | status | wall s | target s | met | timed work by dtype |")
    print("| --- | --- | ---: | ---: | --- | --- |")
    with tempfile.TemporaryDirectory() as directory:
        for probe in args.probes:
            envelope = run(probe, directory)
            seconds = envelope["duration_s"]
            met = "yes" if seconds < TARGET_S else "no"
            work = dtype_seconds(envelope) if probe == "gemm" else "-"
            print("| %s | %s | %.1f | %.0f | %s | %s |" % (probe, envelope["status"], seconds, TARGET_S, met, work))
    return 0


if __name__ == "__main__":
    sys.exit(main())
