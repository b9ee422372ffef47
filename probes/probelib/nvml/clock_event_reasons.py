"""Decoding NVML's clocks-event (formerly "throttle") reason bitmask into names."""
from __future__ import annotations

from typing import Any, Dict, List

# nvml.h nvmlClocksEventReason* / nvmlClocksThrottleReason* bits.
CLOCK_EVENT_REASON_BITS = (
    (0x0001, "gpu_idle"),
    (0x0002, "applications_clocks_setting"),
    (0x0004, "sw_power_cap"),
    (0x0008, "hw_slowdown"),
    (0x0010, "sync_boost"),
    (0x0020, "sw_thermal_slowdown"),
    (0x0040, "hw_thermal_slowdown"),
    (0x0080, "hw_power_brake_slowdown"),
    (0x0100, "display_clock_setting"),
    (0x0200, "board_limit"),
    (0x0400, "reliability"),
)
# Reasons that mean the clocks are held down by something other than idling or the power cap.
SLOWDOWN_REASONS = frozenset({
    "hw_slowdown", "sw_thermal_slowdown", "hw_thermal_slowdown", "hw_power_brake_slowdown", "board_limit",
    "reliability",
})


def decode_clock_event_reasons(mask: int) -> List[str]:
    names = [name for bit, name in CLOCK_EVENT_REASON_BITS if mask & bit]
    known = 0
    for bit, unused_name in CLOCK_EVENT_REASON_BITS:
        known |= bit
    unknown = mask & ~known
    position = 0
    while unknown >> position:
        if (unknown >> position) & 1:
            names.append("unknown_bit_0x%x" % (1 << position))
        position += 1
    return names


def describe_clock_event_reasons(mask: int, method: str) -> Dict[str, Any]:
    names = decode_clock_event_reasons(mask)
    return {
        "mask": mask,
        "mask_hex": "0x%016x" % mask,
        "names": names,
        "slowdown_active": any(name in SLOWDOWN_REASONS for name in names),
        "method": method,
    }
