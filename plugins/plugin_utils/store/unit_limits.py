"""The largest value a probe's result may hold for each physical unit, and which schema fields carry one.

Pure Python. One definition: the probe schemas (schemas/<probe>.schema.json and the shared definitions in
schemas/common.schema.json) state these limits as "maximum" on every number whose field names a unit, and
tests/unit/test_schema_unit_limits.py holds them to this table, so a value beyond it (a power of 1e308 W) is a schema
error of that probe, stored as error with its path, and never reaches the judge. Each limit is the highest value
published for any current accelerator or host with generous headroom (docs/judge.md, "Numbers the judge accepts"):
a limit refuses what no hardware can report, it is no judgement of what is healthy.
"""
from __future__ import annotations

from typing import Dict, Optional

# unit token in a field name -> (largest value, what it is, the published figure it leaves headroom above)
UNIT_LIMITS: Dict[str, tuple] = {
    "w": (5000, "watts per GPU", "1400 W board power (NVIDIA B300, AMD MI355X)"),
    "mhz": (100000, "megahertz", "about 16000 MHz (GDDR7 memory clock as NVML reports it); SM clocks about 3000 MHz"),
    "c": (200, "degrees Celsius", "GPU shutdown temperatures about 100 degrees C"),
    "gbps": (1000000, "gigabytes per second", "8000 GB/s (HBM3e of NVIDIA B200/B300); NVLink 5 1800 GB/s"),
    "gbitps": (100000, "gigabits per second", "1600 Gb/s (a 1.6T Ethernet or XDR InfiniBand port)"),
    "mbps": (100000000, "megabits per second", "1600000 Mb/s (a 1.6T Ethernet port as /sys/class/net/*/speed reads)"),
    "gts": (1000, "gigatransfers per second", "128 GT/s (PCIe 7.0)"),
    "tflops": (1000000, "teraflop/s", "15000 TFLOP/s (NVIDIA B300, dense FP4)"),
    "bytes": (2 ** 60, "bytes", "288 GB of GPU memory, tens of TB of host memory, PB moved in a long sweep"),
    "mib": (2 ** 40, "mebibytes", "the same exbibyte as bytes"),
    "s": (10 ** 10, "seconds", "durations of at most a day (the probe time limit's 86400 s); Unix times about 1.8e9"),
    "us": (10 ** 12, "microseconds", "latencies within a probe's 86400 s limit (8.64e10 us)"),
    "pct": (1000000, "percent", "shares and changes of measured values, which a sane result keeps within a few 100 %"),
}
# Shared definitions named after their unit rather than with it (schemas/common.schema.json, health, tuning).
DEFINITION_UNITS: Dict[str, str] = {"watts": "w", "celsius": "c", "mhz": "mhz", "mib": "mib", "speed_gts": "gts"}


def unit_of_field(name: str) -> Optional[str]:
    """The unit a field's name states ("power_draw_w" -> "w", "sm_clock_mhz_median" -> "mhz"), or None: the last
    word of the name that is a unit."""
    for token in reversed(name.split("_")):
        if token in UNIT_LIMITS:
            return token
    return None


def limit_of_field(name: str) -> Optional[float]:
    unit = unit_of_field(name)
    return UNIT_LIMITS[unit][0] if unit else None
