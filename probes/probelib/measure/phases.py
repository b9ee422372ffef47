"""How a per-GPU probe's devices split into its two phases (issue 35): the devices that run the detailed measurement
alone, and a together-phase worker's share of the device it shares with ``workers_on_device - 1`` others (its part of
the free memory, and on the CPU its part of the cores, set as torch's thread count; the alone phase had them all).
Every per-GPU probe and memtest choose their alone devices and size their workers' memory here."""
from __future__ import annotations

import os
from typing import Any, Dict, List, Optional

from probelib.measure.devices import free_memory_bytes


def alone_devices(devices: List[Dict[str, Any]], choice: str) -> List[Dict[str, Any]]:
    """The devices that run the detailed measurement alone (parameter alone_devices): the first, the lone reference
    the together phase is compared with, or all."""
    return list(devices) if choice == "all" else list(devices[:1])


def memory_share(free_bytes: Any, workers: int) -> Optional[int]:
    """One worker's share of ``free_bytes`` split among ``workers`` (None where the free memory was not read)."""
    return None if free_bytes is None else int(free_bytes) // max(1, int(workers))


def take_share(torch: Any, device: Dict[str, Any], workers_on_device: int) -> Dict[str, Any]:
    """{"workers_on_device", "memory_bytes"[, "cpu_threads"]}: what this worker may use; on the CPU it also sets torch's
    thread count to its share of the cores."""
    sharing = max(1, int(workers_on_device))
    share: Dict[str, Any] = {"workers_on_device": sharing}
    if device["kind"] == "cuda":
        torch.cuda.set_device(device["index"])
    else:
        share["cpu_threads"] = max(1, (os.cpu_count() or 1) // sharing)
        torch.set_num_threads(share["cpu_threads"])
    share["memory_bytes"] = memory_share(free_memory_bytes(torch, device), sharing)
    return share
