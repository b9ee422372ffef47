"""One worker of fusion's together phase (run in its own process by probelib.measure.together): its device run at one
size, the compile and the output check before the start line, the timing after it."""
from __future__ import annotations

from typing import Any, Callable, Dict, List

from probe_packages.fusion.device_run import DeviceRun
from probe_packages.fusion.plan import fits
from probe_packages.fusion.together import headline
from probelib.measure.phases import take_share

DEVICE_KEYS = ("kind", "index", "name", "uuid")


def size_for(plan: Dict[str, Any], wanted: int, share_bytes: int) -> int:
    """``wanted`` when it fits the share, else the largest planned size that does (the smallest when none does: its
    device run then records why it was skipped)."""
    margin = (plan["safety_margin_mib"], plan["safety_margin_pct"])
    candidates: List[int] = sorted(set(plan["sizes_elements"]) | {wanted})
    fitting = [size for size in candidates if size <= wanted and fits(size, plan["element_bytes"], share_bytes, *margin)[0]]
    return max(fitting) if fitting else min(candidates)


def fusion_worker(device: Dict[str, Any], worker: Dict[str, Any], args: Dict[str, Any],
                  start: Callable[[], float]) -> Dict[str, Any]:
    """{"device", "share", "elements", headline numbers, "status", "reason"} of one worker; raises when its size was not
    measured (the worker's error)."""
    import torch

    share = take_share(torch, device, worker["workers_on_device"])
    elements = size_for(args["plan"], int(args["elements"]), share["memory_bytes"])
    started: List[float] = []

    def start_once() -> None:
        if not started:
            started.append(start())

    plan = dict(args["plan"], sizes_elements=[elements])
    try:
        entry = DeviceRun(torch, device, plan, args["membw_bandwidth_gbps"], args["membw_bandwidth_source"],
                          before_timing=start_once).run()
    finally:
        start_once()  # a worker whose compile failed still passes the line, so the others are not held at the barrier
    points = entry.get("points") or []
    if not points or points[0]["status"] != "measured":
        why = points[0]["reason"] if points else (entry.get("error") or {}).get("message", "no point")
        raise RuntimeError("%d elements not measured: %s" % (elements, why))
    result = headline(points[0])
    result.update({"device": {key: device.get(key) for key in DEVICE_KEYS}, "share": share,
                   "problems": list(entry.get("problems") or [])})
    return result
