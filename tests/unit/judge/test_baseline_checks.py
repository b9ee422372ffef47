"""The generic baseline check (judge/baseline_checks.py) on toy measurements: it knows no probe's layout."""
from ansible_collections.gpufleet.validation.plugins.plugin_utils.judge.baseline_checks import against_known_good, judge_measurements
from ansible_collections.gpufleet.validation.plugins.plugin_utils.judge.measurement import Condition, Device, Measurement, Missing, not_measured
from ansible_collections.gpufleet.validation.plugins.plugin_utils.judge.rules import RuleContext
from ansible_collections.gpufleet.validation.plugins.plugin_utils.metric_spec import MetricSpec

UUID = "GPU-8eb0778b-d464-b2c2-c1ff-53da4ffb64cd"
BASELINE = {"id": "toy-sku", "known_good": {"toy_rate": {"value": 100.0, "unit": "GB/s", "source": "a toy rig", "power_limit_w": 700}},
            "datasheet": {"toy_peak": {"value": 125.0, "unit": "GB/s", "source": "the toy datasheet"}}}
RULE = {"id": "toy.rate", "probe": "toy", "check": "rate", "severity": "fail",
        "params": {"known_good": "toy_rate", "datasheet": "toy_peak", "fail_below_pct": 85, "warn_below_pct": 95}}
CONTEXT = RuleContext(host="rig", sku="toy-sku", baseline=BASELINE)
TOY_RATE = MetricSpec("toy.rate_gbps", "Toy copy", "GB/s", "higher", drift_tolerance=0.10, baseline_key="toy_rate")
LOWER = "measured at %(measured)g W, the reference at %(reference)g W: not compared"


def rate(value=None, index=0, kind="cuda", **fields):
    return Measurement.of(TOY_RATE, Device(kind, index, UUID if kind == "cuda" else None), "the toy copy", value=value, **fields)


def test_the_median_of_the_repeats_against_known_good_and_the_datasheet():
    [check] = judge_measurements("rig", RULE, CONTEXT, [rate(90.0, samples=(99.0, 97.0, 98.0))])
    assert (check.status, check.value, check.reference, check.gpu_uuid) == ("pass", 98.0, 100.0, UUID)
    assert check.reason == ("GPU 0 (GPU-8eb0778b): the toy copy 98 GB/s, 98 % of the known-good 100 GB/s (78.4 % of the "
                            "datasheet's 125 GB/s); median of 3 repeats (97-99 GB/s, spread 2.04 %)")
    assert check.reference_source == "baselines/toy-sku.yaml known_good.toy_rate (a toy rig)"
    assert [judged.status for judged in judge_measurements("rig", RULE, CONTEXT, [rate(90.0), rate(80.0)])] == ["warn", "fail"]


def test_the_cpu_a_missing_value_and_no_known_good():
    cpu, missing = judge_measurements("rig", RULE, CONTEXT, [rate(40.0, kind="cpu"),
                                                             rate(missing=not_measured("the toy copy", "it crashed"))])
    assert (cpu.status, cpu.reason) == ("skip", "the CPU: the toy copy was measured on the CPU (no GPU), so there is no GPU value to judge")
    # Filed under no GPU: the dossier's GPU column says "—", not "GPU 0".
    assert (cpu.gpu_index, cpu.gpu_uuid) == (None, None)
    assert (missing.status, missing.reason) == ("error", "GPU 0 (GPU-8eb0778b): the toy copy was not measured: it crashed")
    [unknown] = judge_measurements("rig", RULE, RuleContext(host="rig"), [rate(98.0, detail=" at 1 GiB")])
    assert unknown.status == "skip" and unknown.reason == ("GPU 0 (GPU-8eb0778b): the toy copy at 1 GiB 98 GB/s; no known-good value "
                                                           "for SKU unknown, so it is compared with its peers only")


def test_a_condition_lower_than_the_references_is_a_skip_listed_first():
    lowered = rate(70.0, index=1, conditions=(Condition("power_limit_w", 500.0, "power limit", LOWER),))
    same = rate(98.0, conditions=(Condition("power_limit_w", 695.0, "power limit", LOWER),))   # within 1 %
    first, second = judge_measurements("rig", RULE, CONTEXT, [same, lowered])
    assert (first.status, first.gpu_index, first.value, first.reference) == ("skip", 1, 70.0, 700)
    assert first.reason == "GPU 1 (GPU-8eb0778b): the toy copy 70 GB/s; measured at 500 W, the reference at 700 W: not compared"
    assert (first.reference_source, first.threshold) == ("known-good power_limit_w", "same power limit as the reference")
    assert (second.status, second.gpu_index) == ("pass", 0)
    # without the condition in the reference entry, the rate is compared
    plain = dict(BASELINE, known_good={"toy_rate": {"value": 100.0, "source": "a toy rig"}})
    [compared] = judge_measurements("rig", RULE, RuleContext(host="rig", sku="toy-sku", baseline=plain), [lowered])
    assert compared.status == "fail"


def test_a_missing_value_marked_first_comes_before_the_compared_ones():
    skipped = rate(index=1, missing=Missing("not offered", "skip", "the toy copy is not offered here", listed_first=True))
    statuses = [(check.status, check.gpu_index) for check in judge_measurements("rig", RULE, CONTEXT, [rate(99.0), skipped])]
    assert statuses == [("skip", 1), ("pass", 0)]


def test_against_known_good_reads_one_metric_of_the_probes_measurements():
    def measurements(data):
        return [rate(data["value"]), Measurement("toy.other", "GB/s", "higher", Device("cuda", 0, UUID), "another", value=1.0)]
    [check] = against_known_good(TOY_RATE, measurements)("rig", {"value": 99.0}, RULE, CONTEXT)
    assert check.status == "pass" and check.id == "toy.rate" and check.probe == "toy"


def test_the_known_good_entry_is_the_rules_else_the_catalogues():
    def measurements(data):
        return [rate(data["value"])]
    two = dict(BASELINE, known_good=dict(BASELINE["known_good"], other_rate={"value": 200.0, "unit": "GB/s", "source": "another rig"}))
    context = RuleContext(host="rig", sku="toy-sku", baseline=two)
    check = against_known_good(TOY_RATE, measurements)
    [by_catalogue] = check("rig", {"value": 99.0}, dict(RULE, params={"fail_below_pct": 85, "warn_below_pct": 95}), context)
    assert (by_catalogue.status, by_catalogue.reference) == ("pass", 100.0)
    assert by_catalogue.reference_source == "baselines/toy-sku.yaml known_good.toy_rate (a toy rig)"
    overridden = dict(RULE, params=dict(RULE["params"], known_good="other_rate"), overridden=["params"])
    [by_rule] = check("rig", {"value": 99.0}, overridden, context)
    assert (by_rule.status, by_rule.reference) == ("fail", 200.0)
