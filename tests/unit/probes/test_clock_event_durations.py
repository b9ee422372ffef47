"""Throttle history read through the fake NVML: the clock-event duration field values and the violation status, each
number with its source; what an older driver or nvidia-ml-py lacks is words, never a zero; the window's deltas."""
import pytest

from ansible_collections.gpufleet.validation.plugins.plugin_utils.store.schemas import schema_validator
import fake_pynvml
import health
from fake_pynvml import HW_POWER_BRAKE, HW_THERMAL, SW_POWER_CAP, SW_THERMAL, SYNC_BOOST
from probelib.nvml.access import NvmlReader, NvmlSession
from probelib.nvml.clock_event_durations import (
    NO_HW_SLOWDOWN_COUNTER, REASON_FIELDS, VIOLATION_POLICIES, WindowCounters, field_value_number, read_counters, since_driver_load,
    window_deltas)
from probelib.system.roots import SystemRoots

SECOND = 10 ** 9
COUNTERS = {"handle0": {SW_POWER_CAP: 42 * SECOND + 500, SYNC_BOOST: 0, SW_THERMAL: 0, HW_THERMAL: 3 * SECOND,
                        HW_POWER_BRAKE: 0}}


def _proc(tmp_path, uptime="7200.50 14000.00\n"):
    (tmp_path / "uptime").write_text(uptime)
    return str(tmp_path)


def test_supported_counters_carry_their_values_and_sources(tmp_path):
    module = fake_pynvml.CounterModule(counters=COUNTERS)
    read = since_driver_load(NvmlReader(module), "handle0", _proc(tmp_path))
    assert read["since"] == "driver_load" and read["uptime_s"] == 7200.5
    reasons = read["reasons"]
    assert reasons["sw_power_cap"] == {"ns": 42 * SECOND + 500, "s": 42.0,
                                       "source": "nvmlDeviceGetFieldValues NVML_FI_DEV_CLOCKS_EVENT_REASON_SW_POWER_CAP (74)"}
    assert reasons["hw_thermal_slowdown"]["s"] == 3.0 and reasons["hw_power_brake_slowdown"]["ns"] == 0
    assert reasons["hw_slowdown"] == {"unavailable": NO_HW_SLOWDOWN_COUNTER}
    violations = read["violation_status"]
    assert violations["power"]["ns"] == 42 * SECOND + 500 and violations["thermal"]["s"] == 3.0
    assert violations["power"]["source"] == "nvmlDeviceGetViolationStatus NVML_PERF_POLICY_POWER (0)"
    assert violations["power"]["reference_timestamp"] == fake_pynvml.REFERENCE_TIME_US
    assert violations["reliability"]["ns"] == 0


def test_an_older_driver_without_the_thermal_fields_says_so():
    module = fake_pynvml.CounterModule(counters=COUNTERS, unsupported_fields=(SW_THERMAL, HW_THERMAL, HW_POWER_BRAKE))
    reasons = read_counters(NvmlReader(module), "handle0")["reasons"]
    assert reasons["hw_thermal_slowdown"] == {"unavailable": "nvmlDeviceGetFieldValues NVML_FI_DEV_CLOCKS_EVENT_REASON_HW_THERM_"
                                                             "SLOWDOWN (270): not supported by this GPU (NVML: return code 3)"}
    assert reasons["sw_power_cap"]["s"] == 42.0


def test_an_old_nvidia_ml_py_gives_words_for_every_counter_never_zeros(tmp_path):
    module = fake_pynvml.FakeModule()
    read = since_driver_load(NvmlReader(module), "handle0", str(tmp_path))
    for reason, value in read["reasons"].items():
        assert set(value) == {"unavailable"}, reason
    assert read["reasons"]["hw_thermal_slowdown"]["unavailable"].endswith("this nvidia-ml-py lacks nvmlDeviceGetFieldValues")
    assert read["violation_status"]["power"]["unavailable"].endswith("this nvidia-ml-py lacks nvmlDeviceGetViolationStatus")
    assert "uptime could not be read" in read["uptime_s"]["unavailable"]


def test_without_field_values_the_power_cap_comes_from_the_violation_status_and_says_so():
    module = fake_pynvml.CounterModule(counters=COUNTERS)
    module.nvmlDeviceGetFieldValues = fake_pynvml.not_supported
    reasons = read_counters(NvmlReader(module), "handle0")["reasons"]
    assert reasons["sw_power_cap"]["ns"] == 42 * SECOND + 500
    assert reasons["sw_power_cap"]["source"].startswith("nvmlDeviceGetViolationStatus NVML_PERF_POLICY_POWER (0) (the field: ")
    assert "reference_timestamp" not in reasons["sw_power_cap"]
    assert "not supported by this GPU" in reasons["hw_thermal_slowdown"]["unavailable"]


def test_the_ids_need_no_constant_from_nvidia_ml_py_and_match_its_names():
    module = fake_pynvml.CounterModule(counters=COUNTERS)
    assert not any(name.startswith("NVML_FI_") for name in dir(module))
    assert read_counters(NvmlReader(module), "handle0")["reasons"]["hw_thermal_slowdown"]["s"] == 3.0
    pynvml = pytest.importorskip("pynvml")
    for unused_reason, name, field_id in REASON_FIELDS:
        assert getattr(pynvml, name, field_id) == field_id, name
    for unused_policy, name, value in VIOLATION_POLICIES:
        assert getattr(pynvml, name, value) == value, name


def _counters(sw_power_cap_ns, hw_thermal_ns):
    module = fake_pynvml.CounterModule(counters={"handle0": {SW_POWER_CAP: sw_power_cap_ns, HW_THERMAL: hw_thermal_ns}})
    return read_counters(NvmlReader(module), "handle0")


def test_window_deltas_give_the_growth_and_its_share():
    deltas = window_deltas(_counters(100 * SECOND, 5 * SECOND), _counters(150 * SECOND, 17 * SECOND), 60.0)
    assert deltas["window_s"] == 60.0
    assert deltas["reasons"]["sw_power_cap"]["s"] == 50.0 and deltas["reasons"]["sw_power_cap"]["share_pct"] == 83.333
    assert deltas["reasons"]["hw_thermal_slowdown"]["s"] == 12.0 and deltas["reasons"]["hw_thermal_slowdown"]["share_pct"] == 20.0
    assert deltas["reasons"]["hw_power_brake_slowdown"]["ns"] == 0
    assert deltas["reasons"]["hw_slowdown"] == {"unavailable": NO_HW_SLOWDOWN_COUNTER}
    assert deltas["violation_status"]["thermal"]["s"] == 12.0


def test_a_counter_that_went_down_is_unavailable_with_words():
    deltas = window_deltas(_counters(100 * SECOND, 5 * SECOND), _counters(2 * SECOND, 5 * SECOND), 60.0)
    assert deltas["reasons"]["sw_power_cap"] == {"unavailable": (
        "the counter went down from 100000000000 ns to 2000000000 ns during the window (wrapped, or the driver was "
        "reloaded): no difference to give")}
    assert deltas["reasons"]["hw_thermal_slowdown"]["ns"] == 0


def test_counters_from_different_sources_are_not_subtracted():
    first = _counters(100 * SECOND, 0)
    last = _counters(150 * SECOND, 0)
    last["reasons"]["sw_power_cap"]["source"] = "nvmlDeviceGetViolationStatus NVML_PERF_POLICY_POWER (0)"
    deltas = window_deltas(first, last, 60.0)
    assert "not comparable" in deltas["reasons"]["sw_power_cap"]["unavailable"]


def test_window_counters_time_each_gpu_and_say_when_a_read_is_missing():
    module = fake_pynvml.CounterModule(counters={"handle0": {SW_POWER_CAP: 0}})
    times = iter([10.0, 70.0])
    window = WindowCounters({"GPU-0": (NvmlReader(module), "handle0")}, clock=lambda: next(times))
    window.start()
    module.counters["handle0"][SW_POWER_CAP] = 30 * SECOND
    window.end()
    deltas = window.deltas("GPU-0")
    assert deltas["window_s"] == 60.0 and deltas["reasons"]["sw_power_cap"]["share_pct"] == 50.0
    assert window.deltas("GPU-1") == {"unavailable": "the counters were not read at both ends of the load window"}


def test_health_records_the_counters_per_gpu_and_matches_its_schema(tmp_path):
    module = fake_pynvml.CounterModule(counters=COUNTERS, unsupported_fields=(HW_POWER_BRAKE,))
    session = NvmlSession().open(importer=lambda: module)
    proc = _proc(tmp_path)
    roots = SystemRoots(proc=proc, sys=str(tmp_path), dev=str(tmp_path), etc=str(tmp_path), root=str(tmp_path),
                        var_log=str(tmp_path))
    result = health.collect({"cuda_init": False, "kernel_log_lines": 10, "device_open_test": False, "cuda_init_timeout_s": 1},
                            roots=roots, nvml=session)
    schema_validator("health.schema.json").validate(result.data)
    first, second = result.data["gpus"]
    assert first["clock_event_durations"]["reasons"]["hw_thermal_slowdown"]["s"] == 3.0
    assert first["clock_event_durations"]["uptime_s"] == 7200.5
    assert "not supported" in first["clock_event_durations"]["reasons"]["hw_power_brake_slowdown"]["unavailable"]
    assert second["clock_event_durations"]["reasons"]["sw_power_cap"]["ns"] == 0


def test_a_read_that_raises_is_unavailable_and_the_rest_stands():
    module = fake_pynvml.CounterModule(counters={"handle0": {SW_POWER_CAP: 0}}, violations=False)
    module.nvmlDeviceGetFieldValues = lambda handle, ids: [object()]  # shorter than asked, of no known shape
    reasons = read_counters(NvmlReader(module), "handle0")["reasons"]
    assert "the field value could not be read" in reasons["sw_power_cap"]["unavailable"]
    assert "IndexError" in reasons["hw_thermal_slowdown"]["unavailable"]

    times = iter([10.0, 70.0])
    window = WindowCounters({"GPU-0": (NvmlReader(module), "handle0")}, clock=lambda: next(times))
    window.reads = {"GPU-0": (None, "handle0")}  # a reader that raises AttributeError
    window.start()
    window.end()
    assert window.deltas("GPU-0")["unavailable"].startswith("the clock-event duration counters could not be read: AttributeError")


def test_nvidia_ml_pys_own_field_value_struct_is_read():
    pynvml = pytest.importorskip("pynvml")
    values = (pynvml.c_nvmlFieldValue_t * 2)()
    values[0].fieldId, values[0].valueType, values[0].nvmlReturn = 270, pynvml.NVML_VALUE_TYPE_UNSIGNED_LONG_LONG, 0
    values[0].value.ullVal = 12 * SECOND
    values[1].fieldId, values[1].nvmlReturn = 271, 3
    assert field_value_number(values[0]) == (12 * SECOND, "")
    assert field_value_number(values[1]) == (None, "not supported by this GPU (NVML: return code 3)")
