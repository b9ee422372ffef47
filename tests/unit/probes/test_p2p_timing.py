"""Timing behind a spin: the hold's length, the calibration, and time_lanes' ordering of events (CPU stand-ins)."""
import contextlib
import time
import types

import pytest

from probe_packages.p2p.measure import timed_batch
from probe_packages.p2p.timing import (CALIBRATION_CYCLES, WAKE_CYCLES, EnqueueEstimate, Lane, Spin, cycles_per_s, spin_cycles,
                                       spin_hold_s, time_lanes)
from fake_cuda_event import FakeEvent  # noqa: E402


def test_the_hold_covers_twice_the_expected_enqueue_within_bounds():
    assert spin_hold_s(10, 50e-6) == 5e-3          # 4 x 10 x 50 us = 2 ms, below the 5 ms floor
    assert spin_hold_s(200, 50e-6) == pytest.approx(0.04)
    assert spin_hold_s(10 ** 6, 1.0) == 0.2        # capped
    assert spin_cycles(0.02, 1.98e9) == 39600000
    assert spin_cycles(1e-12, 1e9) == 1
    with pytest.raises(ValueError):
        spin_cycles(0.01, 0.0)


def test_calibration_takes_the_fastest_run():
    assert cycles_per_s(2000000, [0.002, 0.001, 0.00101]) == 2e9
    with pytest.raises(ValueError):
        cycles_per_s(2000000, [0.0, -1.0])


def test_enqueue_estimate_keeps_the_longest_and_doubles_after_an_uncovered_batch():
    estimate = EnqueueEstimate()
    assert estimate.per_copy_s == 50e-6
    estimate.update(0.0003, 10, True)   # 30 us per copy: less than seen
    assert estimate.per_copy_s == 50e-6
    estimate.update(0.001, 10, True)    # 100 us
    assert estimate.per_copy_s == pytest.approx(100e-6)
    estimate.update(0.001, 10, False)   # the spin ran out: ask for 2 x 100 us
    assert estimate.per_copy_s == pytest.approx(200e-6)


class QueryEvent(FakeEvent):
    pending = False

    def query(self):
        return not self.pending


class FakeStream:
    def __init__(self, name, log):
        self.name, self.log = name, log

    def wait_event(self, event):
        self.log.append(("wait", self.name, event))


class FakeSpin:
    """Records holds; the event each hold returns is still pending (the spin outlasted the enqueue) as ``pending`` says,
    one value per hold, True once they run out."""

    def __init__(self, available=True, pending=(True,)):
        self.available = available
        self.pending = list(pending)
        self.holds = []
        self.forgotten = []

    def forget(self, device_index):
        self.forgotten.append(device_index)

    def hold(self, device_index, stream, seconds):
        self.holds.append((device_index, stream.name, seconds))
        if not self.available:
            return None
        event = QueryEvent()
        event.pending = self.pending.pop(0) if self.pending else True
        return event


def _torch():
    return types.SimpleNamespace(cuda=types.SimpleNamespace(Event=QueryEvent))


def _lanes(log, count=2):
    names = [("fwd", 0), ("bwd", 1)][:count]
    return [Lane(index, FakeStream(name, log), lambda name=name: log.append(("copy", name))) for name, index in names]


def test_lanes_start_together_behind_one_spin_and_copies_interleave():
    log = []
    spin = FakeSpin(pending=[True])
    result = time_lanes(_torch(), spin, _lanes(log), 3, EnqueueEstimate())
    assert spin.holds == [(0, "fwd", 5e-3)]  # 4 x 6 copies x 50 us is below the 5 ms floor
    assert log[0][:2] == ("wait", "bwd")             # the second lane waits for the first lane's start event
    assert [entry[1] for entry in log[1:]] == ["fwd", "bwd"] * 3
    assert result["covered"] is True and len(result["elapsed_s"]) == 2
    assert all(seconds >= 0 for seconds in result["elapsed_s"]) and result["enqueue_s"] >= 0


def test_an_uncovered_batch_is_timed_again_behind_a_longer_spin():
    log = []
    spin = FakeSpin(pending=[False, True])
    estimate = EnqueueEstimate()
    result = timed_batch(_torch(), spin, _lanes(log, 1), 200, estimate)
    assert result["covered"] is True and len(spin.holds) == 2 and spin.forgotten == [0]  # calibrated again
    assert spin.holds[1][2] >= spin.holds[0][2]
    still = FakeSpin(pending=[False, False])
    assert timed_batch(_torch(), still, _lanes([], 1), 5, EnqueueEstimate())["covered"] is False


def test_without_a_spin_nothing_is_covered_and_nothing_is_retried():
    spin = FakeSpin(available=False)
    estimate = EnqueueEstimate()
    result = timed_batch(_torch(), spin, _lanes([], 1), 4, estimate)
    assert result["covered"] is False and len(spin.holds) == 1
    assert estimate.per_copy_s >= 50e-6


def test_the_real_spin_class_reports_what_torch_offers():
    class Calibrating:
        def __init__(self):
            self.slept = []

        def _sleep(self, cycles):
            self.slept.append(cycles)
            time.sleep(1e-4)

        Event = QueryEvent

        @staticmethod
        def stream(stream):
            return contextlib.nullcontext()

    cuda = Calibrating()
    spin = Spin(types.SimpleNamespace(cuda=cuda, __version__="2.11.0"))
    assert spin.available and spin.describe() == "torch.cuda._sleep"
    done = spin.hold(0, object(), 0.01)
    assert isinstance(done, QueryEvent) and cuda.slept[:2] == [WAKE_CYCLES, CALIBRATION_CYCLES] and len(cuda.slept) == 5
    rate = spin.rates[0]
    assert rate > 0 and cuda.slept[-1] == spin_cycles(0.01, rate)
    spin.hold(0, object(), 0.01)
    assert len(cuda.slept) == 6  # calibrated once per GPU
    spin.forget(0)
    spin.hold(0, object(), 0.01)
    assert len(cuda.slept) == 11  # until it is told to forget
    old = Spin(types.SimpleNamespace(cuda=types.SimpleNamespace(), __version__="1.0"))
    assert not old.available and old.hold(0, object(), 0.01) is None
    assert "queueing of the copies is included" in old.describe()["unavailable"]
