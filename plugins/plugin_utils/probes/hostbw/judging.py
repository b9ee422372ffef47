"""hostbw: host-to-device and device-to-host copy bandwidth, pinned and pageable."""
from __future__ import annotations

from typing import Any, Dict, List

from ...probe_kit.kit import Device, Measurement, measured, not_measured, finite, is_unavailable, ProbeJudging
from .metrics import PINNED
from .together_checks import hostbw_together_uplink

# The directions a pinned copy is judged and compared in (the bidirectional and pageable copies are shown, not judged).
DIRECTIONS = tuple(PINNED)


def hostbw_measurements(data: Dict[str, Any]) -> List[Measurement]:
    """The pinned H2D and D2H copy bandwidth of each device (median of its repeats); on the CPU path, where no pinned
    copy runs, one record per CPU device saying so."""
    found: List[Measurement] = []
    raw = data.get("devices") if isinstance(data, dict) else None
    devices = [device for device in raw if isinstance(device, dict)] if isinstance(raw, list) else []
    for record in devices:
        device = Device.of(record)
        if "error" in record and "results" not in record:
            found.extend(Measurement.of(PINNED[direction], device, "pinned %s" % direction,
                                        missing=not_measured("pinned %s" % direction, "the device failed: %s" % record["error"]))
                         for direction in DIRECTIONS)
            continue
        for result in record.get("results") or []:
            if not isinstance(result, dict) or result.get("host_memory") != "pinned" or result.get("direction") not in DIRECTIONS:
                continue
            what = "pinned %s copy" % result["direction"].upper()
            median = result.get("median_gbps", {"unavailable": result.get("error", "no median")})
            missing = not_measured(what, median["unavailable"]) if is_unavailable(median) else None
            found.append(Measurement.of(PINNED[result["direction"]], device, what, value=measured(median), missing=missing,
                                        samples=tuple(finite(result.get("repeats_gbps")))))
    if devices and all(device.get("kind") == "cpu" for device in devices):
        for direction in DIRECTIONS:
            if not any(measurement.metric_id == PINNED[direction].id for measurement in found):
                found.extend(Measurement.of(PINNED[direction], Device.of(device), "pinned %s copy" % direction.upper()) for device in devices)
    return found


JUDGING = ProbeJudging(
    checks={"together_uplink": hostbw_together_uplink},
    measurements=hostbw_measurements,
    baseline_checks={"pinned_h2d": PINNED["h2d"], "pinned_d2h": PINNED["d2h"]},
    busy_distorts=frozenset({"together_uplink"}),
)
