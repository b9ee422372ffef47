"""gemm's together phase on the CPU path, for real: two worker processes on the one CPU "device" (workers_per_gpu 2),
each running the sustained method's settle and windows on the calibration shape (the CPU has no power states and no
NVML: its reference is the alone phase's calibration rate of the same shape); the worker function called directly; and
the default (one device, one worker) that does not run it and says why."""
import pytest

from ansible_collections.gpufleet.validation.plugins.plugin_utils.store.schemas import schema_validator
from probe_runs import run_probe
from probe_packages.gemm import together
from probelib.measure.phases import alone_devices

ONE_DEVICE = "one device and workers_per_gpu 1: every device at once is this device alone, measured in the alone phase"
SHORT = {"device": "cpu", "quick": True, "repeats": 2, "sustained_settle_s": 0.3, "sustained_window_s": 0.2,
         "shapes": [{"name": "tiny", "m": 8, "n": 64, "k": 64}]}


def test_the_default_runs_no_together_phase_on_one_device_and_says_why(tmp_path):
    pytest.importorskip("torch")
    envelope = run_probe(tmp_path, "gemm", SHORT)
    assert envelope["status"] == "ok", envelope["reason"]
    schema_validator("gemm.schema.json").validate(envelope["data"])
    assert envelope["data"]["together"] == {"unavailable": ONE_DEVICE}


def test_two_workers_on_the_cpu_run_the_sustained_windows_together(tmp_path):
    pytest.importorskip("torch")
    envelope = run_probe(tmp_path, "gemm", dict(SHORT, workers_per_gpu=2))
    data = envelope["data"]
    schema_validator("gemm.schema.json").validate(data)
    assert envelope["status"] == "ok", envelope["reason"]
    phase = data["together"]
    assert [(entry["worker"], entry["kind"], entry["device_index"], entry["slot"], entry["workers_on_device"], entry["status"])
            for entry in phase["workers"]] == [(0, "cpu", 0, 0, 2, "ok"), (1, "cpu", 0, 1, 2, "ok")]
    calibration = data["devices"][0]["dtypes"]["bf16"]["calibration"]
    assert phase["alone_reference"] == {"device_index": 0, "source": together.CPU_REFERENCE,
                                        "sustained": {"bf16": {"tflops": calibration["tflops"]}}}
    for entry in phase["workers"]:
        result = entry["result"]
        assert result["case"] == calibration["case"] == "square-512"
        sustained = result["sustained"]["bf16"]
        assert sustained["method"] == "sustained" and sustained["tflops"] > 0 and len(sustained["repeats_tflops"]) == 2
        # each window is sized to 0.2 s from one timing; on a CPU shared with other work its length is not held to that
        assert sustained["settle_s"] == 0.3 and all(window["duration_s"] > 0 and window["calls"] >= 1 for window in sustained["windows"])
        assert result["clock_event_durations_window"] == {"unavailable": "not a GPU: the CPU has no clock-event duration counters"}
        assert result["share"]["workers_on_device"] == 2 and result["share"]["cpu_threads"] >= 1


def test_the_worker_prepares_before_the_start_line_and_measures_after_it():
    torch = pytest.importorskip("torch")
    from probe_packages.gemm.cases import build_plan
    from probe_packages.gemm.together_worker import sustained_worker
    from probelib.measure.devices import measured_devices

    plan = build_plan("cpu", True, None)
    plan["power_state_settings"] = {"sustained_settle_s": 0.2, "sustained_window_s": 0.1, "sampling_interval_s": 0.01}
    args = together.worker_args(plan, {"repeats": 1, "fp8_fast_accum": False}, "cpu")
    assert args["dtypes"] == ["bf16"] and args["case"]["name"] == "square-512"
    events = []
    device = measured_devices(torch, "cpu")[0]
    worker = {"worker": 1, "kind": "cpu", "device_index": 0, "slot": 1, "workers_on_device": 2}
    result = sustained_worker(device, worker, dict(args, dtypes=["bf16", "fp16"]), lambda: events.append("start") or 0.0)
    assert events == ["start"]
    assert result["sustained"]["fp16"] == {"unavailable": "no tensor cores on the CPU path"}
    assert result["sustained"]["bf16"]["tflops"] > 0


def test_the_alone_reference_is_the_first_devices_sustained_rate_on_a_gpu():
    gpu = {"device": {"kind": "cuda", "index": 0}, "dtypes": {
        "bf16": {"power_states": {"sustained": {"tflops": 663.0}}, "calibration": {"tflops": 700.0}},
        "fp8_e4m3": {"power_states": {"unavailable": "failed: out of memory"}},
        "fp16": {"unavailable": "compute capability 7.0 is below 8.9"}}}
    reference = together.alone_reference([gpu], ["bf16", "fp8_e4m3", "fp16", "tf32"])
    assert reference["sustained"] == {
        "bf16": {"tflops": 663.0},
        "fp8_e4m3": {"unavailable": "no alone fp8_e4m3 rate: failed: out of memory"},
        "fp16": {"unavailable": "no alone fp16 rate: compute capability 7.0 is below 8.9"},
        "tf32": {"unavailable": "no alone tf32 rate: the alone phase did not time it"}}
    assert together.together_dtypes({"dtypes": ["bf16", "fp32"], "power_state_dtypes": ["bf16"]}, "cuda") == ["bf16"]


def test_alone_devices_first_or_all():
    devices = [{"index": 0}, {"index": 1}, {"index": 2}]
    assert alone_devices(devices, "first") == [{"index": 0}]
    assert alone_devices(devices, "all") == devices and alone_devices([], "first") == []


def test_a_failed_worker_is_in_the_errors():
    phase = {"workers": [{"worker": 0, "device_index": 0, "status": "ok"},
                         {"worker": 1, "device_index": 3, "status": "error", "error": "killed at the deadline"}]}
    assert together.worker_errors(phase) == [{"device_index": 3, "dtype": None, "case": None,
                                              "error": "together worker 1: killed at the deadline"}]
    assert together.worker_errors({"unavailable": ONE_DEVICE}) == []


def test_a_phase_that_raises_is_unavailable_with_its_words_and_one_error(monkeypatch):
    def broken(*unused, **unused_named):
        raise OSError("No space left on device")
    monkeypatch.setattr(together, "run_together", broken)
    plan = {"calibration_case": type("Case", (), {"as_dict": lambda self: {"name": "square-512"}})(), "dtypes": ["bf16"],
            "power_state_settings": {"sustained_settle_s": 3.0, "sustained_window_s": 1.0}}
    record, errors = together.guarded_phase([{"kind": "cpu", "index": 0}], plan,
                                            {"workers_per_gpu": 2, "repeats": 3, "fp8_fast_accum": False}, [])
    assert record == {"unavailable": "the together phase failed: OSError: No space left on device"}
    assert errors == [{"device_index": 0, "dtype": None, "case": None, "error": "together phase: OSError: No space left on device"}]
