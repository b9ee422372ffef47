"""Issue 44: every shipped SKU has a reference for every headline its GPUs can measure (measured, or a datasheet floor
whose ratio's evidence covers the SKU), no two baselines match one GPU, a floor never fails the healthy GPUs its ratio
came from, a user's baseline is named by its folder, and a GPU that matches none says how to get a baseline."""
from __future__ import annotations

import os
import shutil

import pytest
import yaml

from ansible_collections.gpufleet.validation.plugins.plugin_utils.judge.baseline_checks import judge_measurements
from ansible_collections.gpufleet.validation.plugins.plugin_utils.judge.datasheet_floors import FLOOR_RATIOS, covers
from ansible_collections.gpufleet.validation.plugins.plugin_utils.judge.machine_facts import GpuDescriptor
from ansible_collections.gpufleet.validation.plugins.plugin_utils.judge.measurement import Device, Measurement
from ansible_collections.gpufleet.validation.plugins.plugin_utils.judge.rules import RuleContext
from ansible_collections.gpufleet.validation.plugins.plugin_utils.judge.sku import identify_gpu
from ansible_collections.gpufleet.validation.plugins.plugin_utils.probe_kit.registry import metric_catalogue
from ansible_collections.gpufleet.validation.plugins.plugin_utils.rules_and_baselines import load_baselines, load_rules, replaced_shipped
from helpers import ROOT

UUID = "GPU-8eb0778b-d464-b2c2-c1ff-53da4ffb64cd"
HEADLINE_KEYS = sorted(spec.baseline_key for spec in metric_catalogue().values() if spec.baseline_key)
# The healthy numbers the ratios come from (issue 44 and baselines/h200-sxm.yaml): {(sku, key): measured}.
HEALTHY = {("h100-sxm", "torch_copy_4gib"): 3049.0, ("h100-sxm", "bf16_matmul_sustained"): 674.0,
           ("h100-sxm", "fp8_matmul_sustained"): 1207.0, ("h100-sxm", "nvbandwidth_h2d_ce"): 55.4,
           ("h100-sxm", "nvbandwidth_d2h_ce"): 55.4, ("h100-sxm", "bf16_matmul"): 775.0, ("h100-sxm", "fp8_matmul"): 1420.0,
           ("h200-sxm", "torch_copy_4gib"): 4257.9, ("h200-sxm", "bf16_matmul_sustained"): 661.9,
           ("h200-sxm", "fp8_matmul_sustained"): 1202.0, ("h200-sxm", "nvbandwidth_h2d_ce"): 55.4,
           ("h200-sxm", "nvbandwidth_d2h_ce"): 55.1}


def shipped():
    loaded, problems = load_baselines()
    assert problems == []
    return {baseline["id"]: baseline for baseline in loaded}


def can_measure(baseline, key):
    """fp8 keys only where the datasheet has an fp8 rate (not Ampere)."""
    return not key.startswith("fp8_") or "fp8_dense" in baseline["datasheet"]


def test_the_h100_has_a_reference_for_every_headline():
    """The rig's H100 skipped five of its seven headlines: 'no known-good value for SKU h100-sxm'."""
    h100 = shipped()["h100-sxm"]
    assert sorted(key for key in HEADLINE_KEYS if key in h100["known_good"]) == HEADLINE_KEYS


@pytest.mark.parametrize("sku", sorted(shipped()))
def test_every_headline_has_a_reference_wherever_a_floor_ratio_covers_the_sku(sku):
    baseline = shipped()[sku]
    for key in HEADLINE_KEYS:
        if not can_measure(baseline, key):
            assert key not in baseline["known_good"], (sku, key)
            continue
        ratio = FLOOR_RATIOS[key]
        if covers(ratio, sku) and ratio.datasheet in baseline["datasheet"]:
            entry = baseline["known_good"].get(key)
            assert entry is not None, "%s has no known_good.%s though the %s floor ratio covers it" % (sku, key, key)
            assert entry["value"] > 0 and entry["unit"] == baseline["datasheet"][ratio.datasheet]["unit"]
            assert entry.get("method") == "datasheet_floor" or "measured" in entry or entry.get("source"), (sku, key)


FLOORED_KEYS = {"torch_copy_4gib": "hbm_bandwidth", "bf16_matmul_sustained": "bf16_dense", "fp8_matmul_sustained": "fp8_dense",
                "nvbandwidth_h2d_ce": "pcie_bandwidth_per_direction", "nvbandwidth_d2h_ce": "pcie_bandwidth_per_direction"}


def _h100_floored(tmp_path):
    """The H100 SXM baseline with its five measured references (issue 44's rig) written back as the datasheet floors
    that stood in for them before."""
    def to_floors(document):
        for key, datasheet in FLOORED_KEYS.items():
            document["known_good"][key] = {"method": "datasheet_floor", "floor": {"datasheet": datasheet}}
    loaded, problems = load_baselines(str(_folder_with(tmp_path, "h100-sxm.yaml", to_floors)))
    assert problems == []
    return {baseline["id"]: baseline for baseline in loaded}["h100-sxm"]


def test_a_floor_carries_its_value_method_and_a_source_naming_the_ratio_and_its_evidence(tmp_path):
    entry = _h100_floored(tmp_path)["known_good"]["bf16_matmul_sustained"]
    assert (entry["value"], entry["unit"], entry["method"]) == (661.6, "TFLOP/s", "datasheet_floor")
    assert entry["source"].startswith("datasheet floor: 0.669 x the datasheet's 989 TFLOP/s (NVIDIA H100 Tensor Core GPU datasheet")
    assert "; ratio from sustained bf16 matmul" in entry["source"] and "H200 SXM 661.9 / 989 = 0.669" in entry["source"]


@pytest.mark.parametrize("key", sorted(FLOOR_RATIOS))
def test_each_ratio_is_the_lowest_of_its_evidence_and_no_floor_fails_or_warns_a_healthy_gpu(key):
    """A healthy GPU of the evidence sits at or above 100 % of its floor, above the rule's warn threshold."""
    rules = {rule["params"].get("known_good"): rule for rule in load_rules()["rules"] if isinstance(rule.get("params"), dict)
             and isinstance(rule["params"].get("known_good"), str)}
    rule = rules[key]
    baselines = shipped()
    for (sku, measured_key), value in HEALTHY.items():
        if measured_key != key:
            continue
        peak = baselines[sku]["datasheet"][FLOOR_RATIOS[key].datasheet]["value"]
        floor = FLOOR_RATIOS[key].ratio * peak
        assert value >= floor, (sku, key, value, floor)
        assert value >= floor * rule["params"]["warn_below_pct"] / 100.0


def test_a_floor_is_judged_as_one_and_a_half_speed_gpu_fails_it(tmp_path):
    h100 = _h100_floored(tmp_path)
    rule = next(rule for rule in load_rules()["rules"] if rule["id"] == "membw.bandwidth")
    context = RuleContext(host="node-01", sku="h100-sxm", baseline=h100)

    def judge(gbps):
        measurement = Measurement("membw.bandwidth_gbps", "GB/s", "higher", Device("cuda", 0, UUID), "the copy bandwidth", value=gbps)
        return judge_measurements("node-01", rule, context, [measurement])[0]
    healthy, half = judge(3049.0), judge(1524.5)
    assert healthy.status == "pass" and "of the datasheet floor 2971 GB/s" in healthy.reason, healthy.reason
    assert "known_good.torch_copy_4gib (datasheet floor: 0.887 x" in healthy.reference_source
    assert half.status == "fail"


def _folder_with(tmp_path, name, edit):
    folder = tmp_path / "mine"
    shutil.copytree(os.path.join(ROOT, "baselines"), folder)
    path = folder / name
    document = yaml.safe_load(path.read_text())
    edit(document)
    path.write_text(yaml.safe_dump(document, sort_keys=False))
    return folder


def test_a_floor_a_ratio_does_not_cover_or_of_another_datasheet_key_is_refused(tmp_path):
    def floor_on_l4(document):
        document["known_good"]["bf16_matmul_sustained"] = {"method": "datasheet_floor", "floor": {"datasheet": "bf16_dense"}}
    loaded, problems = load_baselines(str(_folder_with(tmp_path, "l4.yaml", floor_on_l4)))
    assert "l4" not in [baseline["id"] for baseline in loaded]
    assert problems == ["%s skipped: known_good.bf16_matmul_sustained: the floor ratio for bf16_matmul_sustained does not cover "
                        "l4 (it covers the evidence's GPUs: GH100 on an SXM board at 700 W (H100 SXM, H200 SXM); a sustained rate "
                        "is the board's power limit's, so it speaks for no other board); measure it, or calibrate it from healthy "
                        "hosts (playbooks/calibrate.yml)" % (tmp_path / "mine" / "l4.yaml")]

    def other_key(document):
        document["known_good"]["torch_copy_4gib"] = {"method": "datasheet_floor", "floor": {"datasheet": "bf16_dense"}}
    unused, [problem] = load_baselines(str(_folder_with(tmp_path / "b", "h100-sxm.yaml", other_key)))
    assert "known_good.torch_copy_4gib: its floor names datasheet.bf16_dense, but the ratio for torch_copy_4gib is of " \
           "datasheet.hbm_bandwidth" in problem


def _descriptors(baseline):
    match = baseline["match"]
    memories = sorted({match["memory_mib"]["min"], match["memory_mib"]["max"], (match["memory_mib"]["min"] + match["memory_mib"]["max"]) // 2})
    ids = [entry["id"] for entry in match["pci_device_ids"]] + [None]
    for name in list(match["names"]) + [None]:
        for device_id in ids:
            if name is None and device_id is None:
                continue
            for memory in memories + [None]:
                yield GpuDescriptor(index=0, name=name, device_id=device_id, memory_mib=memory)


def test_no_gpu_descriptor_matches_two_baselines():
    """Every (name, PCI id, memory) a baseline's match block admits identifies that baseline alone: A100 40GB is not
    A100 80GB, H100 PCIe is not H100 SXM, H200 NVL is not H200 SXM."""
    baselines = list(shipped().values())
    for baseline in baselines:
        for gpu in _descriptors(baseline):
            sku, sentence = identify_gpu(gpu, baselines)
            assert sku == baseline["id"], (gpu, sentence)
    # names and ids are not shared between files either (a tie on name or id would depend on memory alone)
    names = [name for baseline in baselines for name in baseline["match"]["names"]]
    ids = [entry["id"] for baseline in baselines for entry in baseline["match"]["pci_device_ids"]]
    assert len(names) == len(set(names)) and len(ids) == len(set(ids))


def test_a_gpu_matching_none_says_its_identity_and_how_to_write_or_calibrate_a_baseline():
    stranger = GpuDescriptor(index=0, name="NVIDIA GB300", device_id="0x31c210de", memory_mib=288000)
    sku, sentence = identify_gpu(stranger, list(shipped().values()))
    assert sku is None
    assert sentence.startswith("no baseline matches NVIDIA GB300, 0x31c210de, 288000 MiB (its NVML name, PCI device id and memory)")
    assert "write baselines/<id>.yaml" in sentence and "gpufleet_baselines_dir" in sentence and "playbooks/calibrate.yml" in sentence


def test_a_second_file_matching_the_same_gpu_names_both_files(tmp_path):
    def copy_as_mine(document):
        document["id"] = "my-h200"
    folder = _folder_with(tmp_path, "h200-sxm.yaml", lambda document: None)
    document = yaml.safe_load((folder / "h200-sxm.yaml").read_text())
    copy_as_mine(document)
    (folder / "my-h200.yaml").write_text(yaml.safe_dump(document, sort_keys=False))
    loaded, problems = load_baselines(str(folder))
    assert problems == []
    h200 = GpuDescriptor(index=0, name="NVIDIA H200", device_id="0x233510de", memory_mib=143771)
    sku, sentence = identify_gpu(h200, loaded)
    assert sku is None
    assert "%s (gpufleet_baselines_dir)" % (folder / "my-h200.yaml") in sentence
    assert "%s (gpufleet_baselines_dir, in place of the shipped baselines/h200-sxm.yaml)" % (folder / "h200-sxm.yaml") in sentence


def test_an_unknown_skus_skip_names_the_file_that_could_not_be_loaded():
    rule = next(rule for rule in load_rules()["rules"] if rule["id"] == "membw.bandwidth")
    context = RuleContext(host="node-01", sku=None, sku_reason="no baseline matches NVIDIA H200, 0x233510de, 143771 MiB",
                          baseline_problems=["/srv/mine/h200-sxm.yaml skipped: not valid YAML"])
    measurement = Measurement("membw.bandwidth_gbps", "GB/s", "higher", Device("cuda", 0, UUID), "the copy bandwidth", value=2100.0)
    [check] = judge_measurements("node-01", rule, context, [measurement])
    assert check.status == "skip"
    assert "the baseline files that could not be loaded: /srv/mine/h200-sxm.yaml skipped: not valid YAML" in check.reason


def test_a_users_file_replacing_a_shipped_id_is_named_in_its_checks_and_at_run_level(tmp_path):
    def weaker(document):
        document["known_good"]["torch_copy_4gib"]["value"] = 2000.0
        document["known_good"]["torch_copy_4gib"]["measured"]["machines"] = [2000.0]
    folder = _folder_with(tmp_path, "h200-sxm.yaml", weaker)
    loaded, problems = load_baselines(str(folder))
    assert problems == []
    h200 = next(baseline for baseline in loaded if baseline["id"] == "h200-sxm")
    rule = next(rule for rule in load_rules()["rules"] if rule["id"] == "membw.bandwidth")
    measurement = Measurement("membw.bandwidth_gbps", "GB/s", "higher", Device("cuda", 0, UUID), "the copy bandwidth", value=2100.0)
    [check] = judge_measurements("node-01", rule, RuleContext(host="node-01", sku="h200-sxm", baseline=h200), [measurement])
    assert check.reference_source.startswith("%s (gpufleet_baselines_dir, in place of the shipped baselines/h200-sxm.yaml) "
                                             "known_good.torch_copy_4gib" % (folder / "h200-sxm.yaml"))
    replaced = replaced_shipped(loaded)
    assert replaced[0] == ("%s (gpufleet_baselines_dir) replaces the collection's baselines/h200-sxm.yaml and differs from it: "
                           "hosts of SKU h200-sxm are judged against its numbers, not the shipped ones" % (folder / "h200-sxm.yaml"))
    # the other files of the folder are copies of the shipped ones: one sentence names them
    assert len(replaced) == 2 and replaced[1].startswith("%s (gpufleet_baselines_dir) holds copies of the shipped a100-pcie-40gb.yaml" % folder)
    assert replaced_shipped(list(shipped().values())) == []


def test_a_users_folder_without_the_shipped_skus_says_they_are_not_loaded(tmp_path):
    folder = tmp_path / "mine"
    folder.mkdir()
    shutil.copy(os.path.join(ROOT, "baselines", "l4.yaml"), folder / "l4.yaml")
    loaded, problems = load_baselines(str(folder))
    assert problems == [] and [baseline["id"] for baseline in loaded] == ["l4"]
    [copies, missing] = replaced_shipped(loaded)
    assert copies.startswith("%s (gpufleet_baselines_dir) holds copies of the shipped l4.yaml" % folder)
    assert missing.startswith("%s (gpufleet_baselines_dir) replaces the collection's baselines/ as a whole: the shipped SKUs "
                              "a100-pcie-40gb, a100-sxm-40gb, a100-sxm-80gb, b200" % folder)
