"""One ordered pair, measured so that nothing it does can stop the other pairs: every failure becomes a recorded error."""
from __future__ import annotations

import traceback
from typing import Any, Callable, Dict, List, Tuple

from probe_packages.p2p import measure
from probe_packages.p2p.copies import Direction
from probe_packages.p2p.pairs import pair_name
from probe_packages.p2p.timing import Spin

PHASES = ("unidirectional", "bidirectional", "latency")


def describe_exception(exc: BaseException) -> str:
    lines = str(exc).strip().splitlines()
    return "%s: %s" % (type(exc).__name__, lines[0]) if lines else type(exc).__name__


class PairRun:
    """Runs the phases of one pair in turn; a phase that raises is recorded and the next phase still runs."""

    def __init__(self, torch: Any, spin: Spin, src: int, dst: int, plan: Dict[str, Any]) -> None:
        self.torch, self.spin, self.src, self.dst, self.plan = torch, spin, src, dst, plan
        self.name = pair_name(src, dst)
        self.errors: List[Dict[str, str]] = []
        self.mismatches: List[Dict[str, str]] = []
        self.directions: Dict[str, Direction] = {}

    def fail(self, what: str, error: str, trace: str = "") -> None:
        entry = {"pair": self.name, "what": what, "error": error}
        if trace:
            entry["traceback"] = trace[-2000:]
        self.errors.append(entry)

    def attempt(self, what: str, step: Callable[[], Any]) -> Any:
        try:
            return step()
        except Exception as exc:  # one failing phase is recorded; the others still run
            self.fail(what, describe_exception(exc), traceback.format_exc(limit=10))
            return None

    def peer_access(self, src: int, dst: int) -> Any:
        """torch.cuda.can_device_access_peer(src, dst), or None (with the error recorded) when asking fails."""
        return self.attempt("peer_access", lambda: bool(self.torch.cuda.can_device_access_peer(src, dst)))

    def direction(self, key: str, src: int, dst: int, size_bytes: int) -> Direction:
        if key not in self.directions:
            self.directions[key] = Direction(self.torch, src, dst, size_bytes)
        return self.directions[key]

    def run(self, entry: Dict[str, Any]) -> Dict[str, Any]:
        """Fill ``entry`` (identity and link fields already there) with peer_access, the measurements, verified, error."""
        torch, spin, plan, src, dst = self.torch, self.spin, self.plan, self.src, self.dst
        peer = self.peer_access(src, dst)
        entry["peer_access"] = bool(peer)
        if peer is False:
            self.fail("peer_access", "no peer access from cuda:%d to cuda:%d (torch.cuda.can_device_access_peer is False): "
                      "not measured, a copy would be staged through host memory" % (src, dst))
        if peer:
            largest = max(plan["sizes_bytes"])
            try:
                entry["unidirectional"] = self.attempt("unidirectional", lambda: measure.unidirectional(
                    torch, spin, self.direction("forward", src, dst, largest), plan))
                if plan["bidirectional"]:
                    entry["bidirectional"] = self.attempt("bidirectional", lambda: self._bidirectional(largest))
                entry["latency"] = self.attempt("latency", lambda: measure.latency(
                    torch, spin, self.direction("small", src, dst, plan["latency_size_bytes"]), plan))
            finally:
                self.release()
            for phase in PHASES:
                if entry.get(phase) is None:
                    entry.pop(phase, None)
            self.check_data(entry)
        entry["verified"] = not self.errors and not self.mismatches and all(phase in entry for phase in self.expected_phases())
        if self.errors:
            entry["error"] = "; ".join("%s: %s" % (error["what"], error["error"]) for error in self.errors)
        return entry

    def expected_phases(self) -> List[str]:
        return [phase for phase in PHASES if phase != "bidirectional" or self.plan["bidirectional"]]

    def _bidirectional(self, largest: int) -> Dict[str, Any]:
        reverse = self.torch.cuda.can_device_access_peer(self.dst, self.src)
        if not reverse:
            raise RuntimeError("no peer access from cuda:%d to cuda:%d (torch.cuda.can_device_access_peer is False): "
                               "the reverse copy cannot run" % (self.dst, self.src))
        forward = self.direction("forward", self.src, self.dst, largest)
        backward = self.direction("backward", self.dst, self.src, largest)
        return measure.bidirectional(self.torch, self.spin, forward, backward, self.plan)

    def check_data(self, entry: Dict[str, Any]) -> None:
        """A copy whose destination differs from its source: the pair ran (no pair error) but is not verified, and the
        run's errors name it."""
        for phase in PHASES:
            section = entry.get(phase)
            if section is None:
                continue
            points = section["sweep"] if "sweep" in section else [section]
            failed = [point["size_bytes"] for point in points if not point["verified"]]
            if failed:
                self.mismatches.append({"pair": self.name, "what": "data_check",
                                        "error": "%s: the destination differs from the source after the copies at %s bytes"
                                                 % (phase, ", ".join(str(size) for size in failed))})

    def release(self) -> None:
        """Give the buffers back so that the next pair has the memory; a failure here is recorded, not raised.

        Both GPUs are synchronised first: copies a failed phase left queued must not write into memory handed out again.
        """
        for index in (self.src, self.dst):
            self.attempt("release", lambda index=index: self.torch.cuda.synchronize(index))
        self.directions.clear()
        self.attempt("release", self.torch.cuda.empty_cache)


def run_pair(torch: Any, spin: Spin, src: int, dst: int, plan: Dict[str, Any],
             entry: Dict[str, Any]) -> Tuple[Dict[str, Any], List[Dict[str, str]]]:
    """(the pair's entry, its errors); never raises for a failure inside the pair."""
    runner = PairRun(torch, spin, src, dst, plan)
    try:
        runner.run(entry)
    except Exception as exc:  # anything the phases did not catch still stays with this pair
        runner.fail("pair", describe_exception(exc), traceback.format_exc(limit=10))
        for phase in PHASES:
            if entry.get(phase) is None:
                entry.pop(phase, None)
        entry.setdefault("peer_access", False)
        entry["verified"] = False
        entry["error"] = "; ".join("%s: %s" % (error["what"], error["error"]) for error in runner.errors)
    return entry, runner.errors + runner.mismatches
