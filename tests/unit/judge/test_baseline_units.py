"""Baselines state units from a closed list per quantity; a value is converted to the unit the judge measures in or
refused, never reinterpreted (issue 32: torch_copy_4gib given as 4.2579 with unit TB/s was read as 4.26 GB/s, so a
GPU at half its bandwidth passed at "50253 % of the known-good")."""
from __future__ import annotations

import glob
import os

import pytest
import yaml

from ansible_collections.gpufleet.validation.plugins.plugin_utils.judge.baseline_checks import judge_measurements
from ansible_collections.gpufleet.validation.plugins.plugin_utils.judge.measurement import Device, Measurement
from ansible_collections.gpufleet.validation.plugins.plugin_utils.judge.rules import RuleContext
from ansible_collections.gpufleet.validation.plugins.plugin_utils.judge.units import BASELINE_UNITS, QUANTITY_UNITS, to_judged_unit
from ansible_collections.gpufleet.validation.plugins.plugin_utils.rules_and_baselines import load_baselines, load_rules
from ansible_collections.gpufleet.validation.plugins.plugin_utils.store.schemas import load_schema
from helpers import ROOT

UUID = "GPU-8eb0778b-d464-b2c2-c1ff-53da4ffb64cd"


def _h200_with(tmp_path, edit):
    folder = tmp_path / "baselines"
    folder.mkdir()
    path = os.path.join(ROOT, "baselines", "h200-sxm.yaml")
    with open(path, encoding="utf-8") as handle:
        document = yaml.safe_load(handle)
    edit(document)
    (folder / "h200-sxm.yaml").write_text(yaml.safe_dump(document, sort_keys=False))
    return load_baselines(str(folder))


def _copy_rate_rule():
    return next(rule for rule in load_rules()["rules"] if rule["id"] == "membw.bandwidth")


def _judge_copy(baseline, gbps):
    measurement = Measurement("membw.bandwidth_gbps", "GB/s", "higher", Device("cuda", 0, UUID), "the copy bandwidth", value=gbps)
    [check] = judge_measurements("node-01", _copy_rate_rule(), RuleContext(host="node-01", sku="h200-sxm", baseline=baseline),
                                 [measurement])
    return check


def test_the_schema_lists_exactly_the_units_the_judge_converts():
    unit = load_schema("baseline.schema.json")["$defs"]["number"]["properties"]["unit"]
    assert unit["enum"] == list(BASELINE_UNITS)


@pytest.mark.parametrize("value, unit, expected", [(4.2579, "TB/s", (4257.9, "GB/s")), (4257.9, "GB/s", (4257.9, "GB/s")),
                                                   (3965.5, "GiB/s", (3965.5 * 1.073741824, "GB/s")),
                                                   (1.979, "PFLOP/s", (1979.0, "TFLOP/s")), (0.7, "kW", (700.0, "W")),
                                                   (1.98, "GHz", (1980.0, "MHz"))])
def test_a_unit_of_the_list_converts_exactly(value, unit, expected):
    converted, judged = to_judged_unit(value, unit)
    assert judged == expected[1] and converted == pytest.approx(expected[0], rel=1e-12)


def test_a_known_good_in_tb_per_s_is_converted_and_a_half_speed_gpu_fails(tmp_path):
    def in_tb_per_s(document):
        entry = document["known_good"]["torch_copy_4gib"]
        entry["value"], entry["unit"] = 4.2579, "TB/s"
        entry["measured"]["machines"] = [4.2521, 4.2579, 4.2845]
    [baseline], problems = _h200_with(tmp_path, in_tb_per_s)
    assert problems == []
    entry = baseline["known_good"]["torch_copy_4gib"]
    assert entry["unit"] == "GB/s" and entry["value"] == pytest.approx(4257.9)
    assert entry["source"].endswith("(stated as 4.2579 TB/s)")
    assert entry["measured"]["machines"] == pytest.approx([4252.1, 4257.9, 4284.5])
    check = _judge_copy(baseline, 2140.0)
    assert check.status == "fail", check.reason
    assert "50.3 % of the known-good 4258 GB/s" in check.reason


@pytest.mark.parametrize("unit", ["GB", "gb/s", "TFLOPS", "Gb/s", "bytes/s"])
def test_a_unit_outside_the_list_is_refused_naming_file_key_and_the_allowed_units(tmp_path, unit):
    def with_unit(document):
        document["known_good"]["torch_copy_4gib"]["unit"] = unit
    baselines, [problem] = _h200_with(tmp_path, with_unit)
    assert baselines == []
    assert problem.startswith("%s skipped: " % (tmp_path / "baselines" / "h200-sxm.yaml"))
    assert "baseline.known_good.torch_copy_4gib.unit" in problem
    assert "'GB/s', 'TB/s', 'MB/s', 'GiB/s'" in problem, problem


def test_a_unit_of_another_quantity_is_not_compared(tmp_path):
    def in_tflops(document):
        entry = document["known_good"]["torch_copy_4gib"]
        entry["value"], entry["unit"] = 4257.9, "TFLOP/s"
        del entry["measured"]
    [baseline], problems = _h200_with(tmp_path, in_tflops)
    check = _judge_copy(baseline, 2140.0)
    assert check.status == "warn"
    assert "not compared: the baseline's known_good.torch_copy_4gib is in TFLOP/s" in check.reason
    assert "%s (gpufleet_baselines_dir, in place of the shipped baselines/h200-sxm.yaml) known_good.torch_copy_4gib" % (
        tmp_path / "baselines" / "h200-sxm.yaml") in check.reason


def test_every_quantity_names_its_judged_unit_first():
    for base, factors in QUANTITY_UNITS.values():
        assert factors[base] == 1.0 and list(factors)[0] == base


def test_the_shipped_baselines_load_unchanged():
    baselines, problems = load_baselines(os.path.join(ROOT, "baselines"))
    assert problems == [] and len(baselines) == len(glob.glob(os.path.join(ROOT, "baselines", "*.yaml")))
    assert all("(stated as" not in entry["source"] for baseline in baselines for section in ("datasheet", "known_good")
               for entry in baseline[section].values())
