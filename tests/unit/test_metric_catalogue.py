"""The metric catalogue (plugins/plugin_utils/probes/<probe>/metrics.py) is the one owner of a metric's id, title, unit,
direction, drift tolerance and baseline key: every metric a probe produces is declared with the unit and direction it
is produced with, every declared metric is produced, every baseline check's metric, rule and baseline resolve against
it, and every title the rules file still holds names a setting a probe produces."""
import glob
import json
import os
import sys

import pytest
import yaml

from ansible_collections.gpufleet.validation.plugins.plugin_utils.judge.units import to_judged_unit
from ansible_collections.gpufleet.validation.plugins.plugin_utils.probe_kit.metric_catalogue import METHODS, MetricSpec, spec_problems
from ansible_collections.gpufleet.validation.plugins.plugin_utils.rules_and_baselines import load_baselines
from ansible_collections.gpufleet.validation.plugins.plugin_utils.probe_kit.registry import (
    declarations,
    judging_of,
    metric_catalogue,
    probe_catalogue,
)

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def recorded_data():
    """(probe, data) of every recorded result: the committed example runs and the test fixtures."""
    found = []
    for path in sorted(glob.glob(os.path.join(ROOT, "docs", "examples", "**", "*.json"), recursive=True)
                       + glob.glob(os.path.join(ROOT, "tests", "fixtures", "**", "*.json"), recursive=True)):
        name = os.path.basename(path)[:-len(".json")]
        # a stored result is <probe>.json; a fixture is named <probe>_<what it is>.json
        probe = max((probe for probe in declarations() if name == probe or name.startswith(probe + "_")), key=len, default=None)
        if probe is None:
            continue
        with open(path, encoding="utf-8") as handle:
            try:
                envelope = json.load(handle)
            except ValueError:
                continue
        if isinstance(envelope, dict) and isinstance(envelope.get("data"), dict) and envelope.get("status") in ("ok", "partial"):
            found.append((probe, envelope["data"]))
    return found


RECORDED = recorded_data()


def rules():
    with open(os.path.join(ROOT, "docs", "rules.yaml"), encoding="utf-8") as handle:
        return yaml.safe_load(handle)


def test_every_probes_catalogue_is_sound():
    for probe in declarations():
        module_specs = [spec for spec in metric_catalogue().values() if spec.id.startswith(probe + ".")]
        assert spec_problems(probe, module_specs) == []


def test_a_broken_entry_is_named():
    problems = spec_problems("toy", [MetricSpec("other.rate_gbps", "", "furlongs", "up", drift_tolerance=-1)])
    assert len(problems) == 5 and all(problem.startswith("toy: metric other.rate_gbps") for problem in problems)


def test_every_metric_a_probe_produces_is_declared_with_its_unit_and_direction_and_every_declared_one_is_produced():
    produced = {}
    for probe, data in RECORDED:
        for metric in probe_catalogue().probe_metrics(probe, data):
            produced.setdefault(metric.metric_id, set()).add((metric.unit, metric.better))
    catalogue = metric_catalogue()
    assert sorted(set(produced) - set(catalogue)) == []
    for metric_id, shapes in produced.items():
        assert shapes == {(catalogue[metric_id].unit, catalogue[metric_id].better)}, metric_id
    # a metric declared but never produced is a title and a tolerance for nothing: every probe with a recorded result
    # produces each metric it declares (collective_hosts, and a probe just added, have no recorded run here)
    recorded_probes = {probe for probe, unused_data in RECORDED}
    missing = sorted(metric_id for metric_id in set(catalogue) - set(produced) if metric_id.split(".", 1)[0] in recorded_probes)
    # where the recorded runs are left out (the adding-a-probe copy has no docs/examples), fabric is not recorded either
    assert missing == sorted(metric_id for metric_id in NO_RECORDED_RUN_MEASURES if metric_id.split(".", 1)[0] in recorded_probes), missing


# Declared metrics that no recorded run could produce, and why; each is produced by the hand-written result named.
NO_RECORDED_RUN_MEASURES = {
    "fabric.rdma_write_cuda_gbitps": "ib_write_bw needs an RDMA device; the rig (a 1-GPU VM) and this machine have none",
    "fabric.rdma_write_host_gbitps": "ib_write_bw needs an RDMA device; the rig (a 1-GPU VM) and this machine have none",
}


def test_the_metrics_no_recorded_run_measures_are_produced_by_the_hand_written_result():
    sys.path.insert(0, os.path.join(ROOT, "tests", "unit", "judge"))
    import fabric_results  # pylint: disable=import-error,import-outside-toplevel
    produced = {metric.metric_id for metric in probe_catalogue().probe_metrics("fabric", fabric_results.hgx_h200_healthy()["data"])}
    assert set(NO_RECORDED_RUN_MEASURES) <= produced


def test_every_baseline_check_names_a_declared_metric_and_its_rule_the_metrics_baseline_key():
    """The check reads the catalogue's baseline key; the rule's params.known_good states it again, as the value a host's
    rule override replaces (an override may only set a param the rule has), so the two are pinned equal here."""
    by_check = {(rule["probe"], rule["check"]): rule for rule in rules()["rules"]}
    catalogue = metric_catalogue()
    checked = 0
    for probe in declarations():
        judging = judging_of(probe)
        for check, spec in (judging.baseline_checks.items() if judging is not None else ()):
            assert catalogue[spec.id] is spec and spec.baseline_key, (probe, check)
            rule = by_check[(probe, check)]
            assert rule["params"]["known_good"] == spec.baseline_key, (rule["id"], spec.id)
            checked += 1
    assert checked == 7


@pytest.mark.parametrize("path", sorted(glob.glob(os.path.join(ROOT, "baselines", "*.yaml"))))
def test_a_baselines_known_good_value_is_in_its_metrics_unit(path):
    """As loaded: a datasheet floor's unit is its datasheet entry's (rules_and_baselines.load_baselines)."""
    loaded, problems = load_baselines()
    assert problems == []
    sku = os.path.splitext(os.path.basename(path))[0]
    known_good = next(baseline for baseline in loaded if baseline["id"] == sku).get("known_good") or {}
    for spec in metric_catalogue().values():
        entry = known_good.get(spec.baseline_key) if spec.baseline_key else None
        if entry is not None:
            assert to_judged_unit(float(entry["value"]), entry["unit"])[1] == spec.unit, (path, spec.baseline_key)


@pytest.mark.parametrize("path", sorted(glob.glob(os.path.join(ROOT, "baselines", "*.yaml"))))
def test_a_metrics_method_is_the_method_of_its_baselines_known_good_entry(path):
    """A calibrated entry states its metric's method (plugin_utils/calibrate/): burst with burst, sustained with sustained."""
    with open(path, encoding="utf-8") as handle:
        known_good = yaml.safe_load(handle).get("known_good") or {}
    for spec in metric_catalogue().values():
        entry = known_good.get(spec.baseline_key) if spec.baseline_key else None
        if entry is not None and entry.get("method") in METHODS:
            assert entry["method"] == spec.method, (path, spec.id)


def test_the_methods_are_the_baseline_schemas():
    with open(os.path.join(ROOT, "schemas", "baseline.schema.json"), encoding="utf-8") as handle:
        schema = json.load(handle)
    assert set(METHODS) <= set(schema["$defs"]["number"]["properties"]["method"]["enum"])
    assert {spec.method for spec in metric_catalogue().values()} == {None, *METHODS}
    assert spec_problems("toy", [MetricSpec("toy.rate_gbps", "Rate", "GB/s", "higher", 0.1, method="peak")]) == [
        "toy: metric toy.rate_gbps: method 'peak' is not one of burst, sustained"]


def test_every_title_the_rules_file_holds_names_a_setting_a_probe_produces():
    produced = {setting.setting_id for probe, data in RECORDED for setting in probe_catalogue().probe_settings(probe, data)}
    titles = rules()["titles"]
    assert sorted(set(titles) - produced) == []
    assert not set(titles) & set(metric_catalogue())
