"""The GPU's state while the middle repeat runs: a thread takes an NVML snapshot halfway through its timing."""
from __future__ import annotations

import threading
import time
from typing import Any, Callable, Dict, Optional

from probelib.fields import unavailable

METHOD = ("a thread takes the NVML snapshot (GpuSnapshots.take) about halfway through the middle repeat's timing; "
          "'taken' says where its start fell against the repeat's host-side window")


def where_in_window(instant: float, window_start: float, window_end: float) -> str:
    """before / during / after: where ``instant`` lies against [window_start, window_end]."""
    if instant < window_start:
        return "before"
    if instant > window_end:
        return "after"
    return "during"


class SnapshotDuring:
    """Start before a timing, join after it: ``take()`` runs in a thread after ``delay_s``."""

    def __init__(self, take: Callable[[], Any], delay_s: float) -> None:
        self.take = take
        self.delay_s = max(0.0, delay_s)
        self.started_at: Optional[float] = None
        self.result: Any = unavailable("the snapshot thread did not finish")
        self.thread = threading.Thread(target=self._run, name="membw-gpu-snapshot", daemon=True)

    def _run(self) -> None:
        time.sleep(self.delay_s)
        self.started_at = time.time()
        try:
            self.result = self.take()
        except Exception as exc:  # the snapshot must never break the measurement
            self.result = unavailable("the GPU snapshot failed: %s: %s" % (type(exc).__name__, exc))

    def start(self) -> "SnapshotDuring":
        self.thread.start()
        return self

    def finish(self, window_start: float, window_end: float, timeout_s: float = 10.0) -> Dict[str, Any]:
        self.thread.join(timeout_s)
        if self.started_at is None:
            return {"snapshot": unavailable("the snapshot thread did not run within %g s" % timeout_s),
                    "taken": "not taken", "method": METHOD, "delay_s": round(self.delay_s, 6),
                    "repeat_window_unix_s": [round(window_start, 6), round(window_end, 6)]}
        return {"snapshot": self.result, "taken": where_in_window(self.started_at, window_start, window_end),
                "method": METHOD, "delay_s": round(self.delay_s, 6),
                "repeat_window_unix_s": [round(window_start, 6), round(window_end, 6)]}
