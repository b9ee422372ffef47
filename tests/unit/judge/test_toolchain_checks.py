"""The toolchain probe's contracts become checks: pass, fail with the remedy, undecided as skip or error."""

from helpers import RIG_OVERRIDES, baselines, health_ok, judge_fleet, one, rules

ENVELOPE = {"schema_version": "1", "host": "rig", "probe": "toolchain", "status": "ok", "started": "2026-11-30T03:00:00+00:00",
            "duration_s": 3.0, "command": [], "environment": {}, "reason": ""}


def record(contract_id, status, observed, remedy=""):
    return {"id": contract_id, "title": contract_id.replace("_", " "), "status": status, "observed": observed,
            "expected": "it holds", "remedy": remedy, "evidence": [], "details": {}}


def judge(contracts, with_health=True):
    envelopes = {"toolchain": dict(ENVELOPE, data={"method": {}, "contracts": contracts, "software": {}, "errors": []})}
    if with_health:
        envelopes["health"] = health_ok()
    hosts = {"rig": {"envelopes": envelopes, "reached": True, "reason": "", "groups": [], "rule_overrides": RIG_OVERRIDES}}
    return judge_fleet("run6", hosts, baselines(), rules()).hosts["rig"]


def test_each_contract_is_a_check_and_a_failed_one_carries_its_remedy():
    verdict = judge([
        record("driver_supports_cuda_build", "fail", "driver supports CUDA 12.4, torch is built for 13.0",
               "Install a driver of the R580 branch or newer, or a torch build for CUDA <= 12.4."),
        record("nccl_loads", "pass", "NCCL 2.28.9 loads"),
        record("nvml_cuda_agree", "unavailable", "not decided: CUDA did not answer within 120 s"),
        record("no_distorting_environment", "fail", "set: CUDA_LAUNCH_BLOCKING", "Unset CUDA_LAUNCH_BLOCKING before measuring."),
    ])
    driver = one(verdict, "toolchain.driver_supports_cuda_build")
    assert driver.status == "fail" and driver.reason.endswith("Remedy: Install a driver of the R580 branch or newer, or a torch "
                                                              "build for CUDA <= 12.4.")
    assert one(verdict, "toolchain.nccl_loads").status == "pass"
    assert one(verdict, "toolchain.nvml_cuda_agree").status == "error"  # an H200 host: it should have been decidable
    assert one(verdict, "toolchain.no_distorting_environment").status == "warn"  # the rule's severity is warn
    assert verdict.verdict == "fail"


def test_an_undecided_contract_on_a_host_of_unknown_sku_is_a_skip():
    verdict = judge([record("nccl_loads", "unavailable", "not decided: torch built without CUDA")], with_health=False)
    assert one(verdict, "toolchain.nccl_loads").status == "skip"
