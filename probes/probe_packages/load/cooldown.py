"""The optional cool-down at the end: wait ``cooldown_s`` while sampling each GPU, and record how far the temperature fell."""
from __future__ import annotations

import time
from typing import Any, Callable, Dict, List, Optional, Sequence

from probelib.fields import is_unavailable
from probelib.measure.sampler import Sampler
from probelib.nvml.gpu_reads import COLUMNS

_T, _TEMPERATURE, _POWER = COLUMNS.index("t_s"), COLUMNS.index("temperature_c"), COLUMNS.index("power_w")


def not_waited(requested_s: float, why: str) -> Dict[str, Any]:
    return {"requested_s": requested_s, "waited_s": 0.0, "interval_s": None, "gpus": [], "note": why}


def summarize(rows: Sequence[Sequence[Any]], idle_before_c: Any) -> Dict[str, Any]:
    """{start_temperature_c, end_temperature_c, drop_c, end_above_idle_before_c, rows: [[t_s, temperature_c, power_w]]}."""
    compact = [[row[_T], row[_TEMPERATURE], row[_POWER]] for row in rows]
    temperatures = [row[1] for row in compact if isinstance(row[1], (int, float))]
    start: Optional[float] = temperatures[0] if temperatures else None
    end: Optional[float] = temperatures[-1] if temperatures else None
    idle = None if idle_before_c is None or is_unavailable(idle_before_c) else idle_before_c
    return {
        "start_temperature_c": start,
        "end_temperature_c": end,
        "drop_c": round(start - end, 1) if start is not None and end is not None else None,
        "idle_before_temperature_c": idle,
        "end_above_idle_before_c": round(end - idle, 1) if end is not None and idle is not None else None,
        "rows": compact,
    }


def cool_down(reads: Dict[str, Any], idle_before: Dict[str, Any], requested_s: float, interval_s: float,
              clock: Callable[[], float] = time.monotonic, sleep: Callable[[float], None] = time.sleep) -> Dict[str, Any]:
    """Sample every ``interval_s`` for ``requested_s`` (t_s from the start of the wait). idle_before: {uuid: snapshot}."""
    if requested_s <= 0:
        return not_waited(requested_s, "not requested (cooldown_s 0): the probe did not wait after the load")
    if not reads:
        return not_waited(requested_s, "no GPU could be read through NVML: nothing to wait for")
    origin = clock()
    sampler = Sampler(reads, interval_s, 0.0, origin, [], clock=clock).start()
    sleep(requested_s)
    sampler.stop()
    waited = round(clock() - origin, 3)
    gpus: List[Dict[str, Any]] = []
    for uuid, rows in sampler.rows.items():
        before = idle_before.get(uuid, {})
        entry = {"uuid": uuid}
        entry.update(summarize(rows, before.get("temperature_c") if isinstance(before, dict) else None))
        gpus.append(entry)
    return {"requested_s": requested_s, "waited_s": waited, "interval_s": interval_s, "gpus": gpus,
            "note": "waited %g s after the idle snapshot; temperatures sampled every %g s" % (waited, interval_s)}
