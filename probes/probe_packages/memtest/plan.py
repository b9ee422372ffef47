"""The memtest plan: the parameters as they ran on a device kind, the size of each worker's buffer, the injected error.

A GPU worker tests memory_pct % of its share of the GPU's free memory after safety_margin_mib (the share: the free
memory read before any worker started, divided by the workers on the GPU); a CPU worker its share of cpu_mib.
"""
from __future__ import annotations

from typing import Any, Dict, Optional

from probe_packages.memtest.patterns import PERIOD_WORDS, WORD_BYTES
from probelib.params import require

MIB = 1 << 20
# Every buffer is whole 64-word tiles (a walking pattern's period), so chunks and buffers end on a tile.
ALIGN_BYTES = PERIOD_WORDS * WORD_BYTES
# Time for the workers to start, allocate and finish beyond the budget before run_together kills them.
SETUP_ALLOWANCE_S = 240.0


def check_params(params: Dict[str, Any]) -> None:
    """What the spec (params.json) cannot say: a check across parameters."""
    if params["inject_offset_bytes"] >= 0:
        require(params["inject_pattern"] in params["patterns"],
                "inject_pattern %r is not among the patterns run (%s)" % (params["inject_pattern"], ", ".join(params["patterns"])))


def resolve_plan(params: Dict[str, Any], kind: str) -> Dict[str, Any]:
    """The plan that runs on a device of ``kind`` (cuda / cpu), recorded in the data as it ran."""
    cpu = kind != "cuda"
    inject = None
    if params["inject_offset_bytes"] >= 0:
        inject = {"worker": params["inject_worker"], "pattern": params["inject_pattern"],
                  "offset_bytes": params["inject_offset_bytes"], "bit": params["inject_bit"],
                  "note": "a test aid: one bit flipped after the pattern's first pass is written, before it is checked"}
    return {
        "kind": "cpu" if cpu else "cuda",
        "device_request": params["device"],
        "patterns": list(params["patterns"]),
        "budget_s": float(params["cpu_budget_s"] if cpu else params["budget_s"]),
        "word_bytes": WORD_BYTES,
        "chunk_bytes": (params["cpu_chunk_mib"] if cpu else params["chunk_mib"]) * MIB,
        "memory_pct": float(params["memory_pct"]),
        "safety_margin_mib": float(params["safety_margin_mib"]),
        "cpu_mib": params["cpu_mib"],
        "seed": params["seed"],
        "workers_per_gpu": params["workers_per_gpu"],
        "max_error_ranges": params["max_error_ranges"],
        "inject": inject,
    }


def aligned(size_bytes: float) -> int:
    return max(0, int(size_bytes) // ALIGN_BYTES * ALIGN_BYTES)


def gpu_buffer_bytes(free_bytes: int, workers_on_device: int, memory_pct: float, safety_margin_mib: float) -> int:
    """memory_pct % of (free - margin), split between the workers on the GPU, in whole tiles."""
    usable = max(0.0, free_bytes - safety_margin_mib * MIB)
    return aligned(usable * memory_pct / 100.0 / max(1, workers_on_device))


def cpu_buffer_bytes(cpu_mib: int, workers_on_device: int) -> int:
    return aligned(cpu_mib * MIB / max(1, workers_on_device))


def inject_for(plan: Dict[str, Any], worker: int) -> Optional[Dict[str, Any]]:
    """The injected error this worker makes, or None."""
    inject = plan["inject"]
    return inject if inject is not None and inject["worker"] == worker else None
