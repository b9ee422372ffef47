"""Which measurement plan runs: full or quick on a GPU, a small host-to-host plan on the CPU."""
from __future__ import annotations

from typing import Any, Dict

QUICK_BUFFER_MIB = 256
QUICK_ITERATIONS = 8
QUICK_REPEATS = 3
QUICK_WARMUP = 2
CPU_ITERATIONS = 10
CPU_WARMUP = 2
CPU_QUICK_ITERATIONS = 4


def make_plan(kind: str, params: Dict[str, Any]) -> Dict[str, Any]:
    """The copies' plan (copies_plan) and which devices run alone and how many workers per GPU run together."""
    return dict(copies_plan(kind, params), alone_devices=params["alone_devices"], workers_per_gpu=params["workers_per_gpu"])


def copies_plan(kind: str, params: Dict[str, Any]) -> Dict[str, Any]:
    """The plan for a device kind ("cuda" or "cpu") from the probe's parameters.

    GPU, full: pinned and (unless pageable is false) pageable, H2D and D2H, plus pinned bidirectional
    (unless bidirectional is false), buffer_mib, iterations/repeats/warmup as given.
    GPU, quick: pinned only, 256 MiB, 8 copies a repeat, no bidirectional.
    CPU: one host-to-host copy of cpu_buffer_mib (fewer copies when quick).
    """
    quick = bool(params["quick"])
    repeats = int(params["repeats"])
    if kind == "cpu":
        return {
            "name": "cpu_quick" if quick else "cpu",
            "quick": quick,
            "buffer_mib_requested": int(params["cpu_buffer_mib"]),
            "warmup": CPU_WARMUP,
            "iterations": CPU_QUICK_ITERATIONS if quick else CPU_ITERATIONS,
            "repeats": repeats,
            "host_memory": ["pageable"],
            "directions": ["h2h"],
            "bidirectional": False,
            "bidirectional_note": "no GPU: there is no PCIe direction to measure",
        }
    if quick:
        return {
            "name": "gpu_quick",
            "quick": True,
            "buffer_mib_requested": QUICK_BUFFER_MIB,
            "warmup": QUICK_WARMUP,
            "iterations": QUICK_ITERATIONS,
            "repeats": QUICK_REPEATS,
            "host_memory": ["pinned"],
            "directions": ["h2d", "d2h"],
            "bidirectional": False,
            "bidirectional_note": "left out in quick mode",
        }
    bidirectional = bool(params["bidirectional"])
    return {
        "name": "gpu_full",
        "quick": False,
        "buffer_mib_requested": int(params["buffer_mib"]),
        "warmup": int(params["warmup"]),
        "iterations": int(params["iterations"]),
        "repeats": repeats,
        "host_memory": ["pinned", "pageable"] if params["pageable"] else ["pinned"],
        "directions": ["h2d", "d2h"],
        "bidirectional": bidirectional,
        "bidirectional_note": ("pinned only: H2D and D2H at once on two streams; bandwidth sums both directions"
                               if bidirectional else "turned off by the bidirectional parameter"),
    }


def validate_params(params: Dict[str, Any]) -> None:
    if params["device"] not in ("auto", "cuda", "cpu"):
        raise ValueError("device must be auto, cuda or cpu, not %r" % params["device"])
    for key in ("buffer_mib", "cpu_buffer_mib", "iterations", "repeats", "check_elements"):
        if int(params[key]) < 1 or int(params[key]) != params[key]:
            raise ValueError("%s must be a whole number >= 1, not %r" % (key, params[key]))
    if int(params["warmup"]) < 0 or int(params["warmup"]) != params["warmup"]:
        raise ValueError("warmup must be a whole number >= 0, not %r" % params["warmup"])
