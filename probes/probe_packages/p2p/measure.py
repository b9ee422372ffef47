"""The three measurements of one ordered pair: the one-way sweep, the two-way sweep, the small-copy latency."""
from __future__ import annotations

from typing import Any, Dict, List, Tuple

from probe_packages.p2p.copies import Direction
from probe_packages.p2p.summary import bidirectional_point, latency_section, sweep_section, unidirectional_point
from probe_packages.p2p.timing import EnqueueEstimate, Lane, Spin, time_lanes


def synchronize(torch: Any, directions: List[Direction]) -> None:
    for index in sorted({direction.src for direction in directions} | {direction.dst for direction in directions}):
        torch.cuda.synchronize(index)


def timed_batch(torch: Any, spin: Spin, lanes: List[Lane], copies: int, estimate: EnqueueEstimate) -> Dict[str, Any]:
    """One timed batch; redone once, behind a longer spin calibrated afresh, when the spin ended before the copies
    were all queued."""
    result = time_lanes(torch, spin, lanes, copies, estimate)
    if spin.available and not result["covered"]:
        spin.forget(lanes[0].device_index)
        result = time_lanes(torch, spin, lanes, copies, estimate)
    return result


def measure_size(torch: Any, spin: Spin, directions: List[Direction], size_bytes: int, copies: int,
                 plan: Dict[str, Any], estimate: EnqueueEstimate) -> Tuple[List[List[float]], bool, bool]:
    """Every direction at once at one size: ([seconds per copy per repeat] per direction, spin covered, data verified)."""
    for direction in directions:
        direction.clear(size_bytes)
    synchronize(torch, directions)
    lanes = [direction.lane(size_bytes) for direction in directions]
    for unused_copy in range(plan["warmup"]):
        for lane in lanes:
            lane.copy()
    synchronize(torch, directions)
    seconds: List[List[float]] = [[] for unused_lane in lanes]
    covered = True
    for unused_repeat in range(plan["repeats"]):
        result = timed_batch(torch, spin, lanes, copies, estimate)
        covered = covered and result["covered"]
        for times, elapsed in zip(seconds, result["elapsed_s"]):
            times.append(elapsed / copies)
    synchronize(torch, directions)
    verified = all(direction.verified(size_bytes) for direction in directions)
    return seconds, covered, verified


def unidirectional(torch: Any, spin: Spin, forward: Direction, plan: Dict[str, Any]) -> Dict[str, Any]:
    estimate = EnqueueEstimate()
    points, covered = [], True
    for size in plan["sizes_bytes"]:
        seconds, size_covered, verified = measure_size(torch, spin, [forward], size, plan["iterations"], plan, estimate)
        points.append(unidirectional_point(size, seconds[0], verified))
        covered = covered and size_covered
    return sweep_section(points, covered, plan["plateau_tolerance_pct"], plan["plateau_min_points"])


def bidirectional(torch: Any, spin: Spin, forward: Direction, backward: Direction, plan: Dict[str, Any]) -> Dict[str, Any]:
    estimate = EnqueueEstimate()
    points, covered = [], True
    for size in plan["sizes_bytes"]:
        seconds, size_covered, verified = measure_size(torch, spin, [forward, backward], size, plan["iterations"], plan,
                                                       estimate)
        points.append(bidirectional_point(size, seconds[0], seconds[1], verified))
        covered = covered and size_covered
    return sweep_section(points, covered, plan["plateau_tolerance_pct"], plan["plateau_min_points"])


def latency(torch: Any, spin: Spin, small: Direction, plan: Dict[str, Any]) -> Dict[str, Any]:
    size, copies = plan["latency_size_bytes"], plan["latency_copies"]
    seconds, covered, verified = measure_size(torch, spin, [small], size, copies, plan, EnqueueEstimate())
    return latency_section(size, copies, seconds[0], verified, covered)
