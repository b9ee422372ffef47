"""toolchain.nvml_cuda_agree fails when CUDA sees fewer GPUs than the host should have, whatever CUDA_VISIBLE_DEVICES
says: a contract that "passed" with CUDA_VISIBLE_DEVICES='' (0 of 0 expected) is still a host the GPU probes cannot
measure."""
from ansible_collections.gpufleet.validation.plugins.plugin_utils.judge.rules import RuleContext
from ansible_collections.gpufleet.validation.plugins.plugin_utils.probes.toolchain.checks import contract

from helpers import baselines, health_ok, judge_fleet, one, rules

ENVELOPE = {"schema_version": "1", "host": "rig", "probe": "toolchain", "status": "ok", "started": "2026-11-30T03:00:00+00:00",
            "duration_s": 3.0, "command": [], "environment": {}, "reason": ""}
RULE = {"id": "toolchain.nvml_cuda_agree", "probe": "toolchain", "check": "contract", "severity": "fail",
        "params": {"contract": "nvml_cuda_agree"}, "overridden": []}


def agree(status, observed, visible, cuda_count, nvml_count):
    return {"id": "nvml_cuda_agree", "title": "NVML and CUDA agree on the visible GPUs", "status": status,
            "observed": observed, "expected": "it holds", "remedy": "", "evidence": [],
            "details": {"cuda_visible_devices": visible, "cuda_device_count": cuda_count,
                        "nvml_uuids": ["GPU-%d" % index for index in range(nvml_count)]}}


def judge(entry, overrides):
    envelopes = {"health": health_ok(),
                 "toolchain": dict(ENVELOPE, data={"method": {}, "contracts": [entry], "software": {}, "errors": []})}
    hosts = {"rig": {"envelopes": envelopes, "reached": True, "reason": "", "groups": [], "rule_overrides": overrides}}
    return one(judge_fleet("run7", hosts, baselines(), rules()).hosts["rig"], "toolchain.nvml_cuda_agree")


def test_cuda_seeing_none_of_the_expected_gpu_fails_although_the_contract_passed():
    passed = agree("pass", "CUDA shows the 0 expected GPU(s) (CUDA_VISIBLE_DEVICES ''; NVML lists 1)", "", 0, 1)
    check = judge(passed, {"health.gpu_count": {"params": {"expected": 1}}})
    assert check.status == "fail"
    assert check.reason.startswith("CUDA sees 0 of the 1 GPU(s) this host should have (rule health.gpu_count param "
                                   "expected (inventory override)) — CUDA_VISIBLE_DEVICES=''")
    assert (check.value, check.reference) == (0, 1)


def test_a_host_short_of_gpus_is_one_finding_not_also_a_cuda_disagreement():
    """NVML lists 2 of the H200 board's 8 and CUDA sees those 2: health.gpu_count says the host is short (issue 31: the
    same fact was five failing rows); CUDA agrees with NVML, so the contract's own pass stands."""
    check = judge(agree("pass", "CUDA shows the 2 expected GPU(s)", "0,1", 2, 2), {})
    assert check.status == "pass", check.reason


def test_cuda_short_of_nvml_on_a_host_short_of_gpus_is_still_its_own_finding():
    check = judge(agree("pass", "CUDA shows the 1 expected GPU(s)", "0", 1, 2), {})  # NVML lists 2 of the board's 8
    assert check.status == "fail" and "CUDA sees 1 of the 8 GPU(s)" in check.reason and not check.because
    assert "baselines/h200-sxm.yaml gpus_per_node" in check.reason and "CUDA_VISIBLE_DEVICES='0'" in check.reason


def test_all_expected_gpus_seen_passes_and_an_unset_variable_is_named():
    passed = agree("pass", "CUDA shows the 2 expected GPU(s) (CUDA_VISIBLE_DEVICES unset; NVML lists 2)", None, 2, 2)
    check = judge(passed, {"health.gpu_count": {"params": {"expected": 2}}})
    assert check.status == "pass" and check.reason.endswith("CUDA shows the 2 expected GPU(s) (CUDA_VISIBLE_DEVICES "
                                                            "unset; NVML lists 2)")
    context = RuleContext(host="rig", expected_gpus=2, expected_gpus_source="rule health.gpu_count param expected")
    (short,) = contract("rig", {"contracts": [agree("pass", "fine", None, 1, 2)]}, RULE, context)
    assert short.status == "fail"
    assert short.reason.startswith("CUDA sees 1 of the 2 GPU(s) this host should have (rule health.gpu_count param "
                                   "expected) — CUDA_VISIBLE_DEVICES is unset")


def test_without_an_expected_count_or_a_cuda_count_the_contract_decides():
    context = RuleContext(host="rig")
    (check,) = contract("rig", {"contracts": [agree("pass", "fine", "", 0, 0)]}, RULE, context)
    assert check.status == "pass"
    context = RuleContext(host="rig", sku="h200-sxm", expected_gpus=1, expected_gpus_source="x")
    undecided = agree("unavailable", "not decided: CUDA did not answer within 120 s", None, None, 1)
    (check,) = contract("rig", {"contracts": [undecided]}, RULE, context)
    assert check.status == "error" and "did not answer" in check.reason
