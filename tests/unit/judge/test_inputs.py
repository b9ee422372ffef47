"""Baselines, rules and overrides as files: schemas, broken files reported while the others load, SKU matching."""
from __future__ import annotations

import glob
import os
import shutil

import pytest

from ansible_collections.gpufleet.validation.plugins.plugin_utils.probe_kit.registry import probe_catalogue
from ansible_collections.gpufleet.validation.plugins.plugin_utils.judge.trends import TREND_CHECKS
from ansible_collections.gpufleet.validation.plugins.plugin_utils.judge.sku import identify_gpu, identify_host
from ansible_collections.gpufleet.validation.plugins.plugin_utils.probes.health.machine_facts import gpu_descriptor, machine_facts
from ansible_collections.gpufleet.validation.plugins.plugin_utils.rules_and_baselines import (
    load_baselines, load_rules, load_yaml, shipped_rules, validate_overrides)
from ansible_collections.gpufleet.validation.plugins.plugin_utils.store.schemas import schema_validator
from helpers import ROOT, baselines, health_ok, rules


def _schema(name):
    return schema_validator(name)


@pytest.mark.parametrize("path", sorted(glob.glob(os.path.join(ROOT, "baselines", "*.yaml"))))
def test_every_baseline_is_schema_valid(path):
    errors = list(_schema("baseline.schema.json").iter_errors(load_yaml(path)))
    assert errors == [], [error.message for error in errors]


@pytest.mark.parametrize("path", [None, os.path.join(ROOT, "docs", "rules.yaml")])
def test_the_shipped_rules_are_schema_valid_and_name_real_checks(path):
    """The collection's rules as the judge reads them (rules/core.yaml, each probe's rules.yaml and rules/history.yaml),
    and as listed."""
    document = load_yaml(path) if path else shipped_rules()
    assert list(_schema("rules.schema.json").iter_errors(document)) == []
    registries = dict(probe_catalogue().checks, history=TREND_CHECKS)
    for rule in document["rules"]:
        assert rule["check"] in registries[rule["probe"]], rule["id"]
        assert rule["description"]
    assert {rule["id"] for rule in document["rules"] if rule["probe"] == "history"} == {
        "history.slow_decay", "history.returning_fault", "history.flapping", "history.slowest_of_group"}


def test_the_shipped_baselines_and_their_numbers_have_sources():
    loaded = {baseline["id"]: baseline for baseline in baselines()}
    assert sorted(loaded) == ["a100-pcie-40gb", "a100-sxm-40gb", "a100-sxm-80gb", "b200", "h100-nvl", "h100-pcie", "h100-sxm",
                              "h200-nvl", "h200-sxm", "l4", "l40s", "rtx-pro-6000-blackwell"]
    h200 = loaded["h200-sxm"]
    assert (h200["gpus_per_node"], h200["nvlink_links"]) == (8, 18)
    assert h200["datasheet"]["hbm_bandwidth"]["value"] == 4800 and h200["datasheet"]["bf16_dense"]["value"] == 989
    assert h200["known_good"]["nvbandwidth_d2d_write_ce"]["value"] == 396.4
    assert loaded["a100-sxm-80gb"]["nvlink_links"] == 12 and loaded["rtx-pro-6000-blackwell"]["gpus_per_node"] is None
    for baseline in loaded.values():
        for section in ("datasheet", "known_good"):
            for number in baseline[section].values():
                assert number["source"]


def test_default_rule_ids():
    ids = [rule["id"] for rule in rules()["rules"] if rule["probe"] == "health"]
    assert ids == ["health.gpus_on_bus", "health.gpus_listed_on_bus", "health.gpus_on_board", "health.gpu_count",
                   "health.summaries_agree", "health.ecc_enabled",
                   "health.ecc_volatile_uncorrected", "health.retired_pages",
                   "health.remapped_rows", "health.pcie_link_width", "health.pcie_link_gen", "health.nvlink_active",
                   "health.nvlink_errors", "health.gpu_fabric", "health.power_limit", "health.clock_event_reasons", "health.persistence_mode",
                   "health.xid_events", "health.kernel_log_events", "health.pcie_aer_counters", "health.device_majors",
                   "health.device_nodes_present", "health.device_nodes_open", "health.device_node_count", "health.cuda_init",
                   "health.gpu_processes", "health.mig_disabled", "health.firmware_uniform", "health.firmware_pinned", "health.clock_event_durations"]


def test_broken_baselines_are_reported_while_the_others_load(tmp_path):
    for name in ("h200-sxm.yaml", "h100-sxm.yaml"):
        shutil.copy(os.path.join(ROOT, "baselines", name), tmp_path / name)
    (tmp_path / "bad-yaml.yaml").write_text("id: bad-yaml\nmatch: [unclosed\n", encoding="utf-8")
    with open(os.path.join(ROOT, "baselines", "a100-sxm-80gb.yaml"), encoding="utf-8") as handle:
        text = handle.read()
    (tmp_path / "a100-sxm-80gb.yaml").write_text(text.replace("nvlink_links: 12", "nvlink_links: twelve"), encoding="utf-8")
    (tmp_path / "dup.yaml").write_text("id: dup\nid: dup\n", encoding="utf-8")
    loaded, problems = load_baselines(str(tmp_path))
    assert sorted(baseline["id"] for baseline in loaded) == ["h100-sxm", "h200-sxm"]
    assert len(problems) == 3
    assert problems[0].startswith("%s skipped: it breaks schemas/baseline.schema.json: at baseline.nvlink_links:" % (tmp_path / "a100-sxm-80gb.yaml"))
    assert "'twelve' is not of type 'integer'" in problems[0]
    assert problems[1].startswith("{0} skipped: {0} is not valid YAML:".format(tmp_path / "bad-yaml.yaml"))
    assert "found duplicate key 'id'" in problems[2]


def test_baseline_id_must_match_its_file_name(tmp_path):
    shutil.copy(os.path.join(ROOT, "baselines", "h200-sxm.yaml"), tmp_path / "h200.yaml")
    loaded, problems = load_baselines(str(tmp_path))
    assert loaded == [] and problems == ["%s skipped: its id 'h200-sxm' differs from its file name (h200)" % (tmp_path / "h200.yaml")]


def test_broken_rules_raise_a_clear_value_error(tmp_path):
    path = tmp_path / "rules.yaml"
    path.write_text("rules:\n  - id: health.x\n    probe: health\n    check: exec_python\n    severity: fail\n"
                    "    description: code is never evaluated\n", encoding="utf-8")
    with pytest.raises(ValueError, match="rule health.x: check 'exec_python' is not a health check"):
        load_rules(str(path))
    path.write_text("rules:\n  - id: health.x\n    probe: health\n    severity: fatal\n", encoding="utf-8")
    with pytest.raises(ValueError, match="breaks schemas/rules.schema.json") as refused:
        load_rules(str(path))
    # The JSON Schema alone says what is wrong, named by the rule's id and the field.
    assert "rule health.x: 'check' is a required property" in str(refused.value)
    assert "rule health.x: severity: 'fatal' is not one of ['fail', 'warn']" in str(refused.value)
    rule = "  - id: health.x\n    probe: health\n    check: ecc_enabled\n    severity: fail\n    description: twice\n"
    path.write_text("rules:\n" + rule + rule, encoding="utf-8")
    with pytest.raises(ValueError, match="rule health.x is defined twice"):
        load_rules(str(path))


def test_validate_overrides():
    document = rules()
    assert validate_overrides({"health.gpu_count": {"params": {"expected": 2}}}, document) == []
    problems = validate_overrides({"health.gpu_count": {"params": {"expectd": 2}}, "health.nope": {"enabled": False}}, document)
    assert problems[0].startswith("rule_overrides.health.gpu_count.params.expectd: the rule has no such param (it takes: expected)")
    assert problems[1].startswith("rule_overrides.health.nope: no such rule")
    assert "at rule_overrides.health.gpu_count.severity" in validate_overrides({"health.gpu_count": {"severity": "fatal"}})[0]


def test_sku_identification():
    gpu = gpu_descriptor(health_ok()["data"]["gpus"][0])
    assert identify_gpu(gpu, baselines())[0] == "h200-sxm"
    stranger = gpu_descriptor({"name": "NVIDIA XYZ", "pci": {"device_id": "0x1234ABCD"}, "memory": {"total_mib": 81559}})
    assert identify_gpu(stranger, baselines()) == (None, (
        "no baseline matches NVIDIA XYZ, 0x1234abcd, 81559 MiB (its NVML name, PCI device id and memory), so its SKU is unknown "
        "and nothing it measures has a reference; to validate it, write baselines/<id>.yaml for it (copy the file of a similar "
        "SKU, set match.names, match.pci_device_ids and match.memory_mib from these values, and each datasheet and known-good "
        "number with its source) in a folder given with gpufleet_baselines_dir, which replaces the collection's baselines/ (copy "
        "those in too), or calibrate one from a stored run of healthy hosts with playbooks/calibrate.yml"))
    h100 = gpu_descriptor({"name": "NVIDIA H100 80GB HBM3", "pci": {"device_id": "0x233010de"}, "memory": {"total_mib": 81559}})
    assert identify_gpu(h100, baselines())[0] == "h100-sxm"
    # the right name with memory far outside the baseline's range is not that SKU
    assert identify_gpu(gpu_descriptor({"name": "NVIDIA H200", "memory": {"total_mib": 81559}}), baselines())[0] is None
    sku, sentence, unused = identify_host([gpu, h100], baselines())
    assert sku is None and sentence.startswith("mixed GPUs on one host: 1 x h100-sxm, 1 x h200-sxm")
    unlisted = machine_facts({"gpus": {"unavailable": "no NVML"}})
    assert identify_host(unlisted.gpus, baselines(), unlisted.gpus_unavailable)[:2] == (
        None, "no GPU list to identify the SKU from: no NVML")
    unread = gpu_descriptor({"index": 3, "error": "NVML_ERROR_GPU_IS_LOST"})
    assert identify_host([unread], baselines())[1] == "GPU 3 could not be read: NVML_ERROR_GPU_IS_LOST"
    assert identify_host(machine_facts({}).gpus, baselines(), machine_facts({}).gpus_unavailable)[1] == \
        "no GPU list to identify the SKU from: no gpus field"


def test_a_reference_measured_on_several_machines_must_be_their_median(tmp_path):
    with open(os.path.join(ROOT, "baselines", "h200-sxm.yaml"), encoding="utf-8") as handle:
        text = handle.read()
    assert "value: 1202.0" in text
    (tmp_path / "h200-sxm.yaml").write_text(text.replace("value: 1202.0", "value: 1231.6"), encoding="utf-8")
    loaded, problems = load_baselines(str(tmp_path))
    assert loaded == [] and problems == [
        "%s skipped: known_good.fp8_matmul_sustained is 1231.6 but the median of its " % (tmp_path / "h200-sxm.yaml") +
        "measured.machines [1231.6, 1185.6, 1202.0] is 1202.0"]
