# -*- coding: utf-8 -*-
# Copyright: gpufleet.validation contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""What the checks on NVML's clock-event duration counters share (the load probe's load window, gemm's together window,
health's since the driver loaded): the reasons that are a hardware slowdown, the window's key, one reason's growth read
from the record, and the words of the reasons that are expected under a full load and never held against the GPU."""
from __future__ import annotations

from typing import Any, Dict, List, Optional, Tuple

from ...report.number_format import format_quantity
from ...result_fields import is_unavailable

WINDOW_KEY = "clock_event_durations_window"
HARDWARE_REASONS = ("hw_thermal_slowdown", "hw_power_brake_slowdown")
SOFTWARE_THERMAL = "sw_thermal_slowdown"


def window_seconds(entry: Any) -> Optional[Tuple[float, float]]:
    """(seconds, share of the window in %) of one reason's delta, or None when it was not read."""
    if not isinstance(entry, dict) or is_unavailable(entry):
        return None
    seconds, share = entry.get("s"), entry.get("share_pct")
    if not isinstance(seconds, (int, float)) or not isinstance(share, (int, float)):
        return None
    return float(seconds), float(share)


def in_window(name: str, seconds: float, share: float, window_s: Any) -> str:
    return "%s for %s during the %s load window (%s of it)" % (
        name, format_quantity(seconds, "s"), format_quantity(window_s, "s"), format_quantity(share, "%"))


def expected_words(reasons: Dict[str, Any], window_s: Any) -> List[str]:
    """The software power cap and sync boost: recorded, never held against the GPU."""
    words = []
    cap = window_seconds(reasons.get("sw_power_cap"))
    if cap is not None and cap[0] > 0:
        words.append("%s: the software power cap holding the GPU at its power limit, expected under a full matmul load" %
                     in_window("sw_power_cap", cap[0], cap[1], window_s))
    elif cap is not None:
        words.append("sw_power_cap 0 s: the GPU stayed under its power limit")
    boost = window_seconds(reasons.get("sync_boost"))
    if boost is not None and boost[0] > 0:
        words.append("%s: clocks held to a sync boost group's" % in_window("sync_boost", boost[0], boost[1], window_s))
    return words
