"""The load probe's NVML reads and its sampler thread, against a fake NVML at a fast interval; the plan's checks."""
import os
import time

import pytest

import fake_load_nvml
from probe_packages.load.plan import check_params, make_plan
from probelib.measure.sampler import Sampler, next_tick
from probelib.nvml.access import NvmlReader, NvmlSession
from probelib.nvml.gpu_reads import COLUMNS, GpuReads, flatten_processes, match_handles
from probelib.params import load_spec, probe_defaults, problems
from probelib.runner import ParameterError

PROBES = os.path.join(os.path.dirname(__file__), "..", "..", "..", "probes")


def _reads(module, index=0):
    return GpuReads(NvmlReader(module), "handle%d" % index)


def test_one_sample_row_and_its_failures():
    module = fake_load_nvml.LoadModule()
    reads = _reads(module)
    assert reads.reasons_function == "nvmlDeviceGetCurrentClocksEventReasons"
    values, failures = reads.sample()
    assert values == [345, 1593, 75.0, 30, 0x1, 0] and failures == {}
    module.busy.add(0)
    assert reads.sample()[0] == [1755, 2619, 698.0, 55, 0x4, 100]
    module.nvmlDeviceGetTemperature = fake_load_nvml.fake_pynvml.not_supported
    values, failures = reads.sample()
    assert values[3] is None and failures == {"temperature_c": "not supported by this GPU (NVML: Not Supported)"}


def test_older_nvml_falls_back_to_throttle_reasons():
    reads = _reads(fake_load_nvml.LoadModule(event_reasons=False))
    assert reads.reasons_function == "nvmlDeviceGetCurrentClocksThrottleReasons"
    assert reads.sample()[0][4] == 0x1


def test_idle_snapshot():
    module = fake_load_nvml.LoadModule()
    snapshot = _reads(module, 1).snapshot([os.getpid()], origin=100.0, clock=lambda: 98.5)
    assert snapshot["t_s"] == -1.5
    assert (snapshot["sm_clock_mhz"], snapshot["max_sm_clock_mhz"], snapshot["max_mem_clock_mhz"]) == (345, 1980, 3201)
    assert (snapshot["power_w"], snapshot["power_limit_w"], snapshot["temperature_c"]) == (75.0, 700.0, 30)
    assert snapshot["clock_event_reasons"]["names"] == ["gpu_idle"] and snapshot["memory_util_pct"] == 0
    own, stranger = snapshot["processes"]
    assert own["own"] is True and own["kind"] == "compute" and own["used_memory_mib"] == 512.0
    assert stranger["pid"] == fake_load_nvml.STRANGER and stranger["own"] is False
    assert "clock_event_reasons_mask" not in snapshot


def test_processes_unreadable_on_both_lists():
    listed = {"compute": {"unavailable": "a"}, "graphics": {"unavailable": "b"}}
    assert flatten_processes(listed, [1]) == {"unavailable": "NVML could not list the processes (compute: a; graphics: b)"}
    listed["graphics"] = []
    assert flatten_processes(listed, [1]) == []


def test_handles_are_matched_by_uuid():
    session = NvmlSession().open(importer=fake_load_nvml.LoadModule)
    matched = match_handles(session, ["GPU-0000-1", "GPU-ffff", {"unavailable": "no uuid"}])
    assert matched[0] == ("handle1", 1)
    assert matched[1][0] is None and "GPU-ffff" in matched[1][1]["unavailable"]
    assert matched[2][0] is None


def test_next_tick_skips_the_ticks_an_overrunning_round_covered():
    assert next_tick(4, 2.1, 0.5) == (5, 0)   # ended inside its own slot [2.0, 2.5)
    assert next_tick(4, 2.7, 0.5) == (6, 1)   # ran past the tick at 2.5
    assert next_tick(4, 3.6, 0.5) == (8, 3)   # ran past 2.5, 3.0 and 3.5
    assert next_tick(0, 0.0, 0.5) == (1, 0)


def _sample_for(seconds, reads, interval_s, process_interval_s):
    origin = time.monotonic()
    sampler = Sampler(reads, interval_s, process_interval_s, origin, [os.getpid()]).start()
    time.sleep(seconds)
    sampler.stop()
    return sampler


def test_the_sampler_keeps_its_grid_and_its_bookkeeping():
    module = fake_load_nvml.LoadModule()
    reads = {"GPU-0000-0": _reads(module, 0), "GPU-0000-1": _reads(module, 1)}
    sampler = _sample_for(0.6, reads, 0.02, 0.2)
    timing = sampler.timing()
    rounds = timing["rounds"]
    assert 10 <= rounds <= 31 and rounds == len(sampler.times)
    assert all(len(rows) == rounds for rows in sampler.rows.values())
    assert all(len(row) == len(COLUMNS) for rows in sampler.rows.values() for row in rows)
    times = [row[0] for row in sampler.rows["GPU-0000-0"]]
    assert times == sorted(times) and times[0] < 0.02
    assert all(later > earlier for earlier, later in zip(times, times[1:]))
    assert timing["interval_s_actual"]["count"] == rounds - 1
    assert 0.015 <= timing["interval_s_actual"]["median"] <= 0.03
    assert timing["lateness_s"]["min"] >= 0 and timing["scheduled_interval_s"] == 0.02
    assert sampler.failures == {"GPU-0000-0": {}, "GPU-0000-1": {}} and sampler.errors == []
    # processes every 0.2 s (within half a tick): about 3 rounds in 0.6 s, one observation per GPU each
    assert 2 <= timing["process_rounds"] <= 5
    assert len(sampler.process_observations) == 2 * timing["process_rounds"]


class SlowReads:
    """Each read takes 50 ms: with a 20 ms interval every round overruns two ticks."""

    def sample(self):
        time.sleep(0.05)
        return [1, 2, 3.0, 4, 0, 100], {}

    def processes(self, own):
        return []


def test_overrunning_rounds_skip_ticks_and_stay_on_the_grid():
    sampler = _sample_for(0.5, {"GPU-x": SlowReads()}, 0.02, 0.0)
    timing = sampler.timing()
    assert timing["missed_ticks"] >= timing["rounds"] - 1 >= 3
    assert timing["interval_s_actual"]["min"] >= 0.04 and timing["read_duration_s"]["min"] >= 0.045
    assert timing["max_deviation_pct"] >= 100
    # each round was scheduled on the 20 ms grid (t - lateness = k x 0.02), and the skipped ticks add up
    scheduled = [(t - late) / 0.02 for t, late in zip(sampler.times, sampler.lateness)]
    assert all(abs(tick - round(tick)) < 1e-6 for tick in scheduled)
    ticks = [round(tick) for tick in scheduled]
    skipped_between = ticks[-1] - (len(ticks) - 1)  # the last round's own overrun is counted too, after it ended
    assert ticks[0] == 0 and skipped_between <= timing["missed_ticks"] <= skipped_between + 3
    assert sampler.process_observations == [] and timing["process_rounds"] == 0


def test_a_failing_round_is_recorded_and_sampling_goes_on():
    class Broken:
        def sample(self):
            raise RuntimeError("driver went away")

        def processes(self, own):
            return []

    sampler = _sample_for(0.1, {"GPU-x": Broken()}, 0.02, 0.0)
    assert sampler.errors and "driver went away" in sampler.errors[0] and len(sampler.errors) <= 10
    assert sampler.timing()["rounds"] >= 2


def _params(**given):
    params = dict(probe_defaults("load"))
    params.update(given)
    return params


def test_plan_and_parameter_checks():
    plan = make_plan(_params())
    assert plan["duration_s"] == 60.0 and plan["flop_per_product"] == 2 * 8192 ** 3 and plan["cooldown_s"] == 0.0
    assert make_plan(_params(quick=True))["duration_s"] == 20.0
    assert make_plan(_params(quick=True, duration_s=15))["duration_s"] == 15.0
    for given, word in (({"duration_s": 0}, "duration_s"), ({"sample_interval_s": 0.01}, "sample_interval_s"),
                        ({"cooldown_s": -1}, "cooldown_s"), ({"matmul_n": 100}, "matmul_n"), ({"dtype": "fp8"}, "dtype")):
        found = problems(load_spec("load"), given)
        assert len(found) == 1 and word in found[0], found
    for given, word in (({"process_interval_s": 0.1}, "process_interval_s"), ({"duration_s": 4, "warmup_s": 5}, "warmup_s")):
        with pytest.raises(ParameterError, match=word):
            check_params(_params(**given))
    check_params(_params(quick=True))


def test_the_load_code_never_sets_anything_on_the_gpu():
    folder = os.path.join(PROBES, "probe_packages", "load")
    sources = [os.path.join(folder, name) for name in os.listdir(folder) if name.endswith(".py")]
    sources.append(os.path.join(PROBES, "load.py"))
    for path in sources:
        with open(path, encoding="utf-8") as handle:
            text = handle.read()
        for word in ("nvmlDeviceSet", "nvmlDeviceReset", "nvmlDeviceClear", "nvidia-smi"):
            assert word not in text, (path, word)
