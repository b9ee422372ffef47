"""The together checks of gemm and fusion (issue 35) held against their rules: each worker's rate every GPU at once
against the alone rate shared among the workers on its device, the slowdown time NVML counted during each worker's
window, and a phase that did not run (one GPU), that predates the phase, or whose workers were not released together."""
import copy

from probelib.nvml.clock_event_durations import NO_HW_SLOWDOWN_COUNTER, POLICIES, REASONS, duration

from ansible_collections.gpufleet.validation.plugins.plugin_utils.probes.fusion.together_checks import together_bandwidth
from ansible_collections.gpufleet.validation.plugins.plugin_utils.probes.gemm.together_checks import (
    together_sustained, together_throttle)
from ansible_collections.gpufleet.validation.plugins.plugin_utils.store.schemas import schema_validator
from helpers import H200X1_RUN, health_ok, judge_fleet, baselines, recorded, rules, RIG_OVERRIDES

ONE_GPU = "one GPU and workers_per_gpu 1: every GPU at once is this GPU alone, measured in the alone phase"
ALONE = {"bf16": 662.97, "fp8_e4m3": 1180.0}


def rule(rule_id):
    return copy.deepcopy(next(entry for entry in rules()["rules"] if entry["id"] == rule_id))


def counters(window_s=10.0, **seconds):
    reasons = {}
    for name in REASONS:
        if name == "hw_slowdown":
            reasons[name] = {"unavailable": NO_HW_SLOWDOWN_COUNTER}
            continue
        entry = duration(int(seconds.get(name, 0.0) * 1e9), "nvmlDeviceGetFieldValues a field (1)")
        entry["share_pct"] = round(100.0 * entry["s"] / window_s, 3)
        reasons[name] = entry
    policies = {policy: dict(duration(0, "nvmlDeviceGetViolationStatus a policy (0)"), share_pct=0.0) for policy in POLICIES}
    return {"window_s": window_s, "reasons": reasons, "violation_status": policies}


def sustained_record(alone_data, dtype, tflops):
    """The alone device's recorded sustained record of ``dtype`` at ``tflops`` (the shape a worker writes)."""
    record = copy.deepcopy(alone_data["devices"][0]["dtypes"][dtype]["power_states"]["sustained"])
    record["tflops"] = tflops
    record["repeats_tflops"] = [tflops] * record["repeats"]
    return record


def gemm_worker(alone_data, worker, device_index, workers_on_device, rates, window=None, status="ok"):
    entry = {"worker": worker, "kind": "cuda", "device_index": device_index, "slot": worker % workers_on_device,
             "workers_on_device": workers_on_device, "status": status, "start_lag_ms": 0.3, "duration_s": 14.2}
    if status != "ok":
        entry.update(error="RuntimeError: CUDA error: an illegal memory access was encountered", start_lag_ms=None)
        return entry
    entry["result"] = {
        "device": {"kind": "cuda", "index": device_index, "name": "NVIDIA H200", "uuid": "GPU-%08d-0000-0000-0000-000000000000" % device_index},
        "case": "square-8192",
        "sustained": {dtype: sustained_record(alone_data, dtype, tflops) for dtype, tflops in rates.items()},
        "clock_event_durations_window": window or counters(sw_power_cap=9.5),
        "share": {"workers_on_device": workers_on_device, "memory_bytes": 70 * 2 ** 30}}
    return entry


def gemm_data(*workers, released=True):
    """The rig's recorded one-GPU gemm data with a together phase of ``workers`` (gemm_worker's arguments after the data)."""
    data = recorded("gemm", H200X1_RUN)["data"]
    data["together"] = {
        "method": "one process per worker, released together at a barrier", "task": "probe_packages.gemm.together_worker:sustained_worker",
        "workers": [gemm_worker(data, *arguments) for arguments in workers],
        "released_together": released, "start_spread_ms": 0.9 if released else 9000.0, "wall_s": 31.0,
        "alone_reference": {"device_index": 0, "source": "the alone phase's sustained windows",
                            "sustained": {dtype: {"tflops": value} for dtype, value in ALONE.items()}}}
    schema_validator("gemm.schema.json").validate(data)
    return data


def statuses(checks):
    return [(check.gpu_index, check.status) for check in checks]


def test_two_gpus_at_their_alone_rate_pass():
    data = gemm_data((0, 0, 1, {"bf16": 660.0, "fp8_e4m3": 1175.0}), (1, 1, 1, {"bf16": 655.0, "fp8_e4m3": 1170.0}))
    checks = together_sustained("rig", data, rule("gemm.together_sustained"), None)
    assert statuses(checks) == [(0, "pass"), (1, "pass")]
    assert checks[1].reason.startswith("GPU 1 worker 1: bf16 655 TFLOP/s together against 663 TFLOP/s alone = 663 TFLOP/s: 98.8 % of it")
    assert checks[1].gpu_uuid == "GPU-00000001-0000-0000-0000-000000000000" and checks[1].unit == "%"


def test_a_worker_at_half_its_share_fails_naming_the_gpu_the_worker_and_the_dtype():
    data = gemm_data((0, 0, 1, {"bf16": 660.0, "fp8_e4m3": 1175.0}), (1, 1, 1, {"bf16": 331.0, "fp8_e4m3": 1175.0}))
    checks = together_sustained("rig", data, rule("gemm.together_sustained"), None)
    assert statuses(checks) == [(0, "pass"), (1, "fail")]
    assert "GPU 1 worker 1: bf16 331 TFLOP/s together against 663 TFLOP/s alone = 663 TFLOP/s: 49.9 % of it" in checks[1].reason
    assert checks[1].value == 49.9 and checks[1].reference == 90


def test_two_workers_on_one_gpu_are_each_held_to_half_its_alone_rate():
    data = gemm_data((0, 0, 2, {"bf16": 325.0}), (1, 0, 2, {"bf16": 150.0}))
    checks = together_sustained("rig", data, rule("gemm.together_sustained"), None)
    assert statuses(checks) == [(0, "pass"), (0, "fail")]
    assert "bf16 325 TFLOP/s together against 663 TFLOP/s alone / 2 workers on the device = 331 TFLOP/s: 98 % of it" in checks[0].reason
    assert checks[1].reason.startswith("GPU 0 worker 1: bf16 150 TFLOP/s")


def test_two_workers_time_slicing_one_gpu_at_the_rigs_measured_share_pass_and_one_worker_per_gpu_is_not_given_the_allowance():
    # the rig's two-worker run: 306 and 308 TFLOP/s of half its lone 671 (91.3 and 91.8 %); warned before the allowance
    alone = dict(ALONE, bf16=670.65)
    data = gemm_data((0, 0, 2, {"bf16": 306.0}), (1, 0, 2, {"bf16": 308.0}))
    data["together"]["alone_reference"]["sustained"] = {dtype: {"tflops": value} for dtype, value in alone.items()}
    checks = together_sustained("rig", data, rule("gemm.together_sustained"), None)
    assert statuses(checks) == [(0, "pass"), (0, "pass")]
    assert "the lines apply to 91 % of that share: 2 processes time-slice one GPU" in checks[0].reason
    # the same 91.3 % of alone by a worker alone on its GPU (a real node) is a warning: no time-slicing there
    single = gemm_data((0, 0, 1, {"bf16": 612.0}), (1, 1, 1, {"bf16": 660.0}))
    single["together"]["alone_reference"]["sustained"] = {dtype: {"tflops": value} for dtype, value in alone.items()}
    checks = together_sustained("rig", single, rule("gemm.together_sustained"), None)
    assert statuses(checks) == [(0, "warn"), (1, "pass")] and "time-slice" not in checks[0].reason


def test_hw_slowdown_that_grew_in_the_together_window_fails_with_the_gpu_the_reason_and_the_seconds():
    data = gemm_data((0, 0, 1, {"bf16": 660.0}), (1, 1, 1, {"bf16": 600.0}, counters(hw_power_brake_slowdown=3.2, sw_power_cap=9.0)),
                     (2, 2, 1, {"bf16": 650.0}, counters(sw_thermal_slowdown=2.0)))
    checks = together_throttle("rig", data, rule("gemm.together_throttle"), None)
    assert statuses(checks) == [(0, "pass"), (1, "fail"), (2, "warn")]
    assert checks[1].reason.startswith("GPU 1 worker 1: hw_power_brake_slowdown grew 3.2 s during the 10 s together window")
    assert "check power delivery" in checks[1].reason and checks[1].value == 3.2 and checks[1].unit == "s"
    assert "sw_power_cap for 9 s" in checks[1].reason  # the power cap: reported, expected, not judged
    assert checks[0].reason.startswith("GPU 0 worker 0: no hardware or thermal slowdown time during the 10 s together window")
    assert "sw_thermal_slowdown grew 2 s" in checks[2].reason


def test_a_failed_worker_is_an_error_and_the_others_are_judged():
    data = gemm_data((0, 0, 1, {"bf16": 660.0}), (1, 1, 1, {}, None, "error"))
    checks = together_sustained("rig", data, rule("gemm.together_sustained"), None)
    assert statuses(checks) == [(0, "pass"), (1, "error")]
    assert "GPU 1 worker 1: the together worker failed: RuntimeError: CUDA error" in checks[1].reason


def test_workers_not_released_together_warn_even_at_their_rate():
    data = gemm_data((0, 0, 1, {"bf16": 660.0}), (1, 1, 1, {"bf16": 660.0}), released=False)
    checks = together_sustained("rig", data, rule("gemm.together_sustained"), None)
    assert statuses(checks) == [(0, "warn"), (1, "warn")]
    assert "not released together (start spread 9000 ms)" in checks[0].reason


def test_one_gpu_skips_and_an_older_result_without_the_phase_skips():
    data = recorded("gemm", H200X1_RUN)["data"]
    older = together_sustained("rig", data, rule("gemm.together_sustained"), None)
    assert [check.status for check in older] == ["skip"] and "no together phase" in older[0].reason
    data["together"] = {"unavailable": ONE_GPU}
    schema_validator("gemm.schema.json").validate(data)
    for check_function, rule_id in ((together_sustained, "gemm.together_sustained"), (together_throttle, "gemm.together_throttle")):
        (check,) = check_function("rig", data, rule(rule_id), None)
        assert check.status == "skip" and check.reason == "the together phase did not run: " + ONE_GPU


def test_the_cpu_path_is_shown_but_not_judged():
    data = gemm_data((0, 0, 2, {"bf16": 0.01}), (1, 0, 2, {"bf16": 0.01}))
    for entry in data["together"]["workers"]:
        entry["kind"] = "cpu"
    checks = together_sustained("rig", data, rule("gemm.together_sustained"), None)
    assert [check.status for check in checks] == ["skip", "skip"] and "CPU worker 0: the CPU path" in checks[0].reason


def test_the_judge_runs_the_together_rules_on_an_older_result_and_on_a_new_one():
    hosts = {"rig": {"envelopes": {"health": health_ok(), "gemm": recorded("gemm", H200X1_RUN)}, "reached": True, "reason": "",
                     "groups": [], "rule_overrides": RIG_OVERRIDES}}
    verdict = judge_fleet("run6", hosts, baselines(), rules()).hosts["rig"]
    assert {check.id: check.status for check in verdict.checks if ".together_" in check.id} == {
        "gemm.together_sustained": "skip", "gemm.together_throttle": "skip"}
    envelope = recorded("gemm", H200X1_RUN)
    envelope["data"] = gemm_data((0, 0, 1, {"bf16": 660.0}), (1, 1, 1, {"bf16": 200.0}))
    hosts["rig"]["envelopes"]["gemm"] = envelope
    verdict = judge_fleet("run6", hosts, baselines(), rules()).hosts["rig"]
    found = sorted((check.id, check.gpu_index, check.status, check.because) for check in verdict.checks if ".together_" in check.id)
    assert found == [("gemm.together_sustained", 0, "pass", ""), ("gemm.together_sustained", 1, "fail", ""),
                     ("gemm.together_throttle", 0, "pass", ""), ("gemm.together_throttle", 1, "pass", "")]


def test_a_gpu_slow_together_because_its_power_brake_engaged_is_one_finding_the_slowdown():
    envelope = recorded("gemm", H200X1_RUN)
    envelope["data"] = gemm_data((0, 0, 1, {"bf16": 660.0}), (1, 1, 1, {"bf16": 400.0}, counters(hw_power_brake_slowdown=4.0)))
    hosts = {"rig": {"envelopes": {"health": health_ok(), "gemm": envelope}, "reached": True, "reason": "", "groups": [],
                     "rule_overrides": RIG_OVERRIDES}}
    verdict = judge_fleet("run6", hosts, baselines(), rules()).hosts["rig"]
    found = sorted((check.id, check.gpu_index, check.status, check.because) for check in verdict.checks if ".together_" in check.id)
    assert found == [("gemm.together_sustained", 0, "pass", ""), ("gemm.together_sustained", 1, "fail", "gemm.together_throttle"),
                     ("gemm.together_throttle", 0, "pass", ""), ("gemm.together_throttle", 1, "fail", "")]


def fusion_data(*rates, elements=268435456):
    """A fusion result whose together workers (GPU i, one each) reached ``rates`` (unfused GB/s, fused GB/s)."""
    alone = {"device_index": 0, "elements": 268435456, "unfused_achieved_gbps": 4000.0, "fused_achieved_gbps": 4200.0,
             "unfused_time_per_iteration_s": 0.0016, "fused_time_per_iteration_s": 0.00065, "measured_speedup": 2.46}
    workers = []
    for index, (unfused, fused) in enumerate(rates):
        result = dict(alone, elements=elements, unfused_achieved_gbps=unfused, fused_achieved_gbps=fused,
                      device={"kind": "cuda", "index": index, "name": "NVIDIA H200", "uuid": "GPU-%d" % index},
                      share={"workers_on_device": 1, "memory_bytes": 2 ** 36}, problems=[])
        del result["device_index"]
        workers.append({"worker": index, "kind": "cuda", "device_index": index, "slot": 0, "workers_on_device": 1,
                        "status": "ok", "result": result, "start_lag_ms": 0.2, "duration_s": 3.0})
    return {"together": {"method": "m", "workers": workers, "released_together": True, "start_spread_ms": 0.4, "wall_s": 9.0,
                         "alone_reference": alone}}


def test_fusion_a_gpu_whose_chain_is_slower_together_warns():
    checks = together_bandwidth("rig", fusion_data((3950.0, 4150.0), (2000.0, 4150.0)), rule("fusion.together_bandwidth"), None)
    assert statuses(checks) == [(0, "pass"), (1, "warn")]
    assert ("GPU 1 worker 1: at 268435456 elements: unfused 2000 GB/s together against 4000 GB/s alone = 4000 GB/s: 50 % "
            "of it") in checks[1].reason


def test_fusion_a_different_size_is_not_compared_and_an_older_result_skips():
    (check,) = together_bandwidth("rig", fusion_data((10.0, 10.0), elements=1024), rule("fusion.together_bandwidth"), None)
    assert check.status == "skip" and "timed at 1024 elements, the alone reference at 268435456: not the same size" in check.reason
    (check,) = together_bandwidth("rig", {"devices": []}, rule("fusion.together_bandwidth"), None)
    assert check.status == "skip" and "no together phase" in check.reason


def test_fusion_two_workers_on_one_gpu_say_the_time_slicing_allowance_once():
    data = fusion_data((1960.0, 2060.0), (1955.0, 2065.0))
    for entry in data["together"]["workers"]:
        entry["device_index"], entry["workers_on_device"] = 0, 2
        entry["result"]["device"]["index"] = 0
    checks = together_bandwidth("rig", data, rule("fusion.together_bandwidth"), None)
    assert [check.status for check in checks] == ["pass", "pass"]
    for check in checks:
        assert check.reason.count("the lines apply to 91 % of that share") == 1, check.reason
        assert check.reason.index("fused 2") < check.reason.index("the lines apply")
