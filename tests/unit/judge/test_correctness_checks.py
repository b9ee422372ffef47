"""Correctness held against the rules: a single element that differs from the reference fails with the GPU, the product
and the magnitude (load.correctness, gemm.correctness); a GPU whose reference digest differs from its peers' is named
(load.correctness_across_gpus); results recorded before the checks are judged skip with the reason."""
import pytest

from ansible_collections.gpufleet.validation.plugins.plugin_utils.judge.product_checks import difference_words, odd_ones

from helpers import GPU0, GPU1, H200X1_RUN, H200X2_RUN, RIG_OVERRIDES, baselines, checks_of, health_ok, judge_fleet, one, recorded, rules

SHA_A, SHA_B, SHA_C = "a" * 64, "b" * 64, "c" * 64
FLIP = {"check": 2, "product": 128, "differing_elements": 1, "first_index": [1, 1], "first_got": -2.98438,
        "first_expected": 2.98438, "max_abs_diff": 5.96875}


def correctness(sha=SHA_A, mismatches=(), checks_run=40, mode="bitwise", **extra):
    record = {"reference_sha256": sha, "multi_processor_count": 132, "checks_run": checks_run, "every_checkpoints": 8,
              "mismatching_checks": len(mismatches), "mismatching_elements": sum(m["differing_elements"] for m in mismatches),
              "mismatches": list(mismatches), "check_gpu_ms": 12.0, "check_cost_pct": 0.4, "mode": mode,
              "deterministic": mode == "bitwise", "tolerance": None if mode == "bitwise" else 0.5}
    if mode != "bitwise":
        record["at_rest_difference"] = {"differing_elements": 3, "max_abs_diff": 0.0078}
    record.update(extra)
    return record


def judge_load(*records, names=None):
    envelope = recorded("load")
    template = envelope["data"]["gpus"][0]
    uuids = [GPU0, GPU1] + ["GPU-%d" % index for index in range(2, len(records))]
    envelope["data"]["gpus"] = [dict(template, index=index, uuid=uuids[index], name=(names or {}).get(index, template["name"]),
                                     correctness=record) for index, record in enumerate(records)]
    hosts = {"rig": {"envelopes": {"health": health_ok(), "load": envelope}, "reached": True, "reason": "", "groups": [],
                     "rule_overrides": RIG_OVERRIDES}}
    return judge_fleet("run35", hosts, baselines(), rules()).hosts["rig"]


def test_pure_logic_the_odd_digest_is_named_and_a_tie_names_every_gpu():
    assert odd_ones([(0, SHA_A), (1, SHA_A), (2, SHA_B), (3, SHA_A)]) == (SHA_A, [2])
    assert odd_ones([(0, SHA_A), (1, SHA_A)]) == (SHA_A, [])
    assert odd_ones([(0, SHA_A), (1, SHA_B)]) == (None, [0, 1])
    assert odd_ones([(0, SHA_A), (1, SHA_B), (2, SHA_C)]) == (None, [0, 1, 2])
    assert odd_ones([]) == (None, [])
    assert difference_words(FLIP) == "1 element differs, the first at [1, 1] (got -2.98438, expected 2.98438), max |diff| 5.96875"
    assert "max |diff| nan" in difference_words(dict(FLIP, differing_elements=4, max_abs_diff="nan"))


def test_a_single_flipped_element_fails_with_the_gpu_the_product_and_the_magnitude():
    verdict = judge_load(correctness(), correctness(mismatches=[FLIP], injected={"gpu": 1, "check": 2, "element": 8193, "bit": 15}))
    assert one(verdict, "load.correctness", 0).status == "pass"
    check = one(verdict, "load.correctness", 1)
    assert check.status == "fail" and check.value == 1 and check.unit == "elements" and check.gpu_uuid == GPU1
    assert check.reason.startswith("GPU 1 (%s): 1 of 40 checks differed from the reference product (compared bit for bit): "
                                   "check 2 (product 128): 1 element differs, the first at [1, 1] (got -2.98438, expected "
                                   "2.98438), max |diff| 5.96875" % GPU1[:12]), check.reason
    assert "injected on purpose by the test aid inject_bit_flip bit 15, check 2, element 8193, gpu 1" in check.reason
    assert verdict.verdict == "fail"


def test_clean_gpus_pass_and_say_how_they_were_compared():
    verdict = judge_load(correctness(), correctness(mode="tolerance"))
    first, second = one(verdict, "load.correctness", 0), one(verdict, "load.correctness", 1)
    assert first.status == second.status == "pass"
    assert "40 checks every 8 checkpoint(s), each product equal to the reference computed before the load (bit for bit)" in first.reason
    assert "the checks took 0.4 % of the GPU time" in first.reason
    assert "not bit for bit: two products of the same inputs at rest differed in 3 element(s)" in second.reason


def test_no_check_ran_is_an_error_not_a_pass():
    assert one(judge_load(correctness(checks_run=0)), "load.correctness", 0).status == "error"


def test_the_gpu_whose_digest_differs_from_its_peers_is_named():
    verdict = judge_load(correctness(), correctness(), correctness(sha=SHA_B), correctness())
    (check,) = checks_of(verdict, "load.correctness_across_gpus")
    assert check.status == "fail" and check.gpu_index == 2
    assert "GPU 2 (GPU-2): its reference product (sha256 bbbbbbbbbbbb…) differs from the one 3 other" in check.reason


def test_two_gpus_that_disagree_fail_without_a_majority_to_blame():
    (check,) = checks_of(judge_load(correctness(), correctness(sha=SHA_B)), "load.correctness_across_gpus")
    assert check.status == "fail" and check.gpu_index is None and "no digest holds a majority" in check.reason


def test_gpus_of_different_models_are_not_compared_and_same_digests_pass():
    verdict = judge_load(correctness(), correctness(), correctness(sha=SHA_C), names={2: "NVIDIA H100 80GB HBM3"})
    found = checks_of(verdict, "load.correctness_across_gpus")
    assert sorted(check.status for check in found) == ["pass", "skip"]
    assert "the only GPU of its model here" in next(check for check in found if check.status == "skip").reason


def test_a_gpu_in_tolerance_mode_is_left_out_of_the_digest_comparison():
    (check,) = checks_of(judge_load(correctness(), correctness(), correctness(sha=SHA_B, mode="tolerance")),
                         "load.correctness_across_gpus")
    assert check.status == "pass" and "not compared: GPU 2 (GPU-2) (its products at rest differ" in check.reason


def test_one_gpu_skips_the_comparison_across_gpus():
    (check,) = checks_of(judge_load(correctness()), "load.correctness_across_gpus")
    assert check.status == "skip" and check.reason.startswith("one GPU")


def _judge_recorded(probe, run):
    hosts = {"rig": {"envelopes": {"health": health_ok(), probe: recorded(probe, run)}, "reached": True, "reason": "",
                     "groups": [], "rule_overrides": RIG_OVERRIDES}}
    return judge_fleet("run35", hosts, baselines(), rules()).hosts["rig"]


@pytest.mark.parametrize("run", [H200X2_RUN, H200X1_RUN])
def test_results_recorded_before_the_checks_are_judged_skip_with_the_reason(run):
    load = _judge_recorded("load", run)
    for check in checks_of(load, "load.correctness") + checks_of(load, "load.correctness_across_gpus"):
        assert check.status == "skip" and "from before" in check.reason, check.reason
    gemm = _judge_recorded("gemm", run)
    found = checks_of(gemm, "gemm.correctness")
    assert found and all(check.status == "skip" and "from before they were verified" in check.reason for check in found)


def _gemm_with(verifications):
    envelope = recorded("gemm")
    device = envelope["data"]["devices"][0]
    results = [result for result in device["results"] if isinstance(result["measurement"], dict) and "tflops" in result["measurement"]]
    for result, verification in zip(results, verifications):
        result["verification"] = verification
    envelope["data"]["devices"] = [device]
    hosts = {"rig": {"envelopes": {"health": health_ok(), "gemm": envelope}, "reached": True, "reason": "", "groups": [],
                     "rule_overrides": RIG_OVERRIDES}}
    return judge_fleet("run35", hosts, baselines(), rules()).hosts["rig"], results


def _verified(**changes):
    record = {"mode": "bitwise", "deterministic": True, "tolerance": None, "equal": True, "differing_elements": 0,
              "max_abs_diff": 0.0}
    record.update(changes)
    return record


def test_a_gemm_case_with_one_differing_element_fails_naming_the_case_and_dtype():
    flipped = _verified(equal=False, differing_elements=1, first_index=[0, 7], first_got=1.5, first_expected=1.49219,
                        max_abs_diff=0.0078125)
    verdict, results = _gemm_with([_verified(), flipped, _verified()])
    check = one(verdict, "gemm.correctness", 0)
    assert check.status == "fail" and check.value == 1
    assert "%s %s: 1 element differs, the first at [0, 7] (got 1.5, expected 1.49219), max |diff| 0.0078125" % (
        results[1]["name"], results[1]["dtype"]) in check.reason, check.reason


def test_gemm_cases_that_agree_pass():
    verdict, unused_results = _gemm_with([_verified(), _verified(), {"unavailable": "not timed: needs 9 GiB"}])
    check = one(verdict, "gemm.correctness", 0)
    assert check.status == "pass" and check.reason.startswith("GPU 0 (%s): 2 cases verified" % GPU0[:12]), check.reason
