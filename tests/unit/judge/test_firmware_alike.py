"""GPU firmware alike: within a node (health.firmware_uniform), across the SKU's hosts (the VBIOS, InfoROM image and
GSP firmware settings: drift and "settings unlike most hosts"), and against a baseline's pins (health.firmware_pinned)."""
from __future__ import annotations

import copy
import os

import pytest
import yaml

from ansible_collections.gpufleet.validation.plugins.plugin_utils.judge.rules import RuleContext, effective_rules
from ansible_collections.gpufleet.validation.plugins.plugin_utils.probes.health.firmware_checks import (
    firmware_pinned, firmware_uniform)
from ansible_collections.gpufleet.validation.plugins.plugin_utils.probes.health.firmware_parts import firmware_settings
from ansible_collections.gpufleet.validation.plugins.plugin_utils.probes.health.firmware_versions import compare_versions
from ansible_collections.gpufleet.validation.plugins.plugin_utils.rules_and_baselines import load_baselines, load_yaml
from ansible_collections.gpufleet.validation.plugins.plugin_utils.store.schemas import schema_validator
from helpers import ROOT, RIG_OVERRIDES, as_machine, baselines, health_ok, judge_fleet, judge_one, one, rules

VBIOS, OTHER_VBIOS = "96.00.A5.00.1A", "96.00.74.00.01"
INFOROM, GSP = "G520.0282.02.02", "580.159.04"


def _rule(rule_id):
    return copy.deepcopy(next(rule for rule in effective_rules(rules())[0] if rule["id"] == rule_id))


def _gpus(count, vbios=VBIOS, gsp=GSP):
    """count H200 records as health writes them, every one on the rig's firmware."""
    template = health_ok()["data"]["gpus"][0]
    gpus = []
    for index in range(count):
        gpu = copy.deepcopy(template)
        gpu.update(index=index, uuid="GPU-%08d-0000-0000-0000-000000000000" % index, vbios_version=vbios,
                   gsp_firmware_version=gsp)
        gpus.append(gpu)
    return gpus


def _uniform(gpus):
    return firmware_uniform("node1", {"gpus": gpus}, _rule("health.firmware_uniform"), RuleContext(host="node1"))


def test_eight_gpus_one_on_another_vbios_names_it_with_the_majority():
    gpus = _gpus(8)
    gpus[5]["vbios_version"] = OTHER_VBIOS
    [check] = _uniform(gpus)
    assert (check.status, check.gpu_index, check.value, check.reference) == ("fail", 5, OTHER_VBIOS, VBIOS)
    assert check.reason == ("GPU 5 (GPU-00000005): VBIOS 96.00.74.00.01 where the other 7 of 8 NVIDIA H200 GPUs run "
                            "96.00.A5.00.1A; update its firmware to match")


def test_eight_gpus_alike_pass_with_their_versions():
    [check] = _uniform(_gpus(8))
    assert check.status == "pass" and check.gpu_index is None
    assert check.reason == ("VBIOS 96.00.A5.00.1A on all 8 NVIDIA H200 GPUs; InfoROM image G520.0282.02.02 on all 8 "
                            "NVIDIA H200 GPUs; GSP firmware 580.159.04 on all 8 NVIDIA H200 GPUs")


def test_one_gpu_has_nothing_to_compare():
    [check] = _uniform(_gpus(1))
    assert check.status == "pass"
    assert check.reason == ("one GPU: nothing to compare (VBIOS 96.00.A5.00.1A, InfoROM image G520.0282.02.02, "
                            "GSP firmware 580.159.04)")


def test_two_gpus_split_have_no_majority_and_each_version_is_named():
    gpus = _gpus(2)
    gpus[1]["vbios_version"] = OTHER_VBIOS
    [check] = _uniform(gpus)
    assert check.status == "fail" and check.gpu_index is None
    assert check.reason.startswith("VBIOS differs across the 2 NVIDIA H200 GPUs with no majority: "
                                   "96.00.74.00.01 on GPU 1; 96.00.A5.00.1A on GPU 0;")


def test_an_unread_version_is_said_and_the_others_still_compared():
    gpus = _gpus(3)
    gpus[2]["gsp_firmware_version"] = {"unavailable": "this nvidia-ml-py lacks nvmlDeviceGetGspFirmwareVersion"}
    [check] = _uniform(gpus)
    assert check.status == "pass"
    assert check.reason.endswith("GSP firmware 580.159.04 on all 2 NVIDIA H200 GPUs; not read: GSP firmware of GPU 2 "
                                 "(this nvidia-ml-py lacks nvmlDeviceGetGspFirmwareVersion)")


def test_gpus_of_two_models_are_each_compared_with_their_own():
    gpus = _gpus(4)
    for gpu in gpus[2:]:
        gpu.update(name="NVIDIA H100 80GB HBM3", vbios_version=OTHER_VBIOS)
    [check] = _uniform(gpus)
    assert check.status == "pass"
    assert "VBIOS 96.00.74.00.01 on all 2 NVIDIA H100 80GB HBM3 GPUs" in check.reason


def test_the_recorded_rig_passes_through_the_judge():
    verdict = judge_one(health_ok())
    check = one(verdict, "health.firmware_uniform")
    assert check.status == "pass"
    assert check.reason == "VBIOS 96.00.A5.00.1A on all 2 NVIDIA H200 GPUs; InfoROM image G520.0282.02.02 on all 2 NVIDIA H200 GPUs"
    assert one(verdict, "health.firmware_pinned").reason == \
        "the baseline pins no firmware (baselines/h200-sxm.yaml has no firmware: key)"
    assert one(verdict, "health.firmware_pinned").status == "skip"


def test_the_settings_are_the_versions_on_the_host_sorted():
    gpus = _gpus(3)
    gpus[1]["vbios_version"] = OTHER_VBIOS
    del gpus[0]["gsp_firmware_version"], gpus[1]["gsp_firmware_version"]
    gpus[2]["gsp_firmware_version"] = {"unavailable": "not supported by this GPU (NVML: Not Supported)"}
    settings = {setting.setting_id: setting for setting in firmware_settings({"gpus": gpus})}
    assert settings["vbios"].value == "96.00.74.00.01, 96.00.A5.00.1A" and settings["vbios"].words == "VBIOS"
    assert settings["inforom_image"].value == INFOROM
    assert settings["gsp_firmware"].value == {"unavailable": "not supported by this GPU (NVML: Not Supported)"}
    # a result written before the GSP firmware was recorded has no such setting
    assert [setting.setting_id for setting in firmware_settings(health_ok()["data"])] == ["vbios", "inforom_image"]


def _fleet_host(number, vbios=VBIOS):
    envelope = as_machine(health_ok(), number)
    for gpu in envelope["data"]["gpus"]:
        gpu["vbios_version"] = vbios
    return {"envelopes": {"health": envelope}, "reached": True, "reason": "", "groups": ["rack1"],
            "rule_overrides": RIG_OVERRIDES}


def test_a_host_on_another_vbios_is_named_among_its_skus_hosts():
    hosts = {"node1": _fleet_host(1), "node2": _fleet_host(2), "node3": _fleet_host(3, OTHER_VBIOS)}
    judgement = judge_fleet("run2", hosts, baselines(), rules())
    [minority] = [found for found in judgement.setting_minorities if found["setting_id"] == "vbios"]
    assert minority["sentence"] == "VBIOS: 1 of 3 h200-sxm hosts have 96.00.74.00.01 (node3); 2 have 96.00.A5.00.1A"
    check = one(judgement.hosts["node3"], "fleet.settings")
    assert check.status == "warn"
    assert check.reason == ("settings unlike most hosts of its SKU: VBIOS 96.00.74.00.01 where 2 of 3 h200-sxm hosts have "
                            "96.00.A5.00.1A; confirm the difference is intended")
    assert not [check for check in judgement.hosts["node1"].checks if check.id == "fleet.settings"]
    # within the node all its GPUs agree: no finding of firmware_uniform on node3
    assert one(judgement.hosts["node3"], "health.firmware_uniform").status == "pass"


def test_a_vbios_changed_since_the_previous_run_is_a_drift_warn():
    earlier = health_ok()
    for gpu in earlier["data"]["gpus"]:
        gpu["vbios_version"] = OTHER_VBIOS
    check = one(judge_one(health_ok(), previous={"rig": {"health": earlier}}), "drift.vbios")
    assert check.status == "warn" and "VBIOS changed since run" in check.reason
    assert (check.value, check.reference) == (VBIOS, OTHER_VBIOS)


def _pinned(gpus, pins, baseline_id="h200-sxm"):
    baseline = {"id": baseline_id, "firmware": pins} if pins is not None else {"id": baseline_id}
    return firmware_pinned("node1", {"gpus": gpus}, _rule("health.firmware_pinned"),
                           RuleContext(host="node1", baseline=baseline))


def test_a_gpu_off_the_allowed_vbios_fails_and_the_others_pass():
    gpus = _gpus(2)
    gpus[1]["vbios_version"] = OTHER_VBIOS
    first, second = _pinned(gpus, {"vbios": {"allowed": [VBIOS], "source": "the vendor's firmware bundle 1.2"}})
    assert first.status == "pass" and first.reason == "GPU 0 (GPU-00000000): VBIOS 96.00.A5.00.1A, pinned by baselines/h200-sxm.yaml firmware.vbios"
    assert (second.status, second.value, second.reference) == ("fail", OTHER_VBIOS, VBIOS)
    assert "is not one the baseline allows (one of 96.00.A5.00.1A, baselines/h200-sxm.yaml firmware.vbios: the vendor's " \
        "firmware bundle 1.2)" in second.reason


def test_a_minimum_orders_the_versions():
    gpus = _gpus(2, gsp="570.133.20")
    gpus[1]["gsp_firmware_version"] = "580.159.04"
    older, newer = _pinned(gpus, {"gsp": {"minimum": "575.51.03", "source": "a fleet decision"},
                                  "vbios": {"minimum": "96.00.74.00.01", "source": "a fleet decision"}})
    assert older.status == "fail" and "GSP firmware 570.133.20 is older than the minimum 575.51.03" in older.reason
    assert older.value == "570.133.20"
    assert newer.status == "pass" and "GSP firmware 580.159.04, at or above the minimum 575.51.03" in newer.reason


def test_no_pin_or_no_sku_skips_with_the_reason():
    [check] = _pinned(_gpus(2), None)
    assert (check.status, check.reason) == ("skip", "the baseline pins no firmware (baselines/h200-sxm.yaml has no firmware: key)")
    [check] = firmware_pinned("node1", {"gpus": _gpus(1)}, _rule("health.firmware_pinned"), RuleContext(host="node1"))
    assert (check.status, check.reason) == ("skip", "the SKU is unknown, so no baseline pins firmware")


def test_a_pin_the_result_cannot_be_held_to_says_why():
    gpus = _gpus(1)
    gpus[0]["inforom_image_version"] = {"unavailable": "not supported by this GPU (NVML: Not Supported)"}
    [check] = _pinned(gpus, {"inforom_image": {"allowed": [INFOROM], "source": "s"}, "vbios": {"minimum": "96.00", "source": "s"}})
    assert check.status == "warn" and "cannot be ordered against the pinned minimum 96.00" in check.reason
    assert "InfoROM image (pinned to one of G520.0282.02.02) is not offered here" in check.reason


@pytest.mark.parametrize("first, second, order", [
    ("96.00.A5.00.1A", "96.00.74.00.01", 1), ("96.00.74.00.01", "96.00.A5.00.1A", -1), (VBIOS, VBIOS, 0),
    ("570.133.20", "580.159.04", -1), ("580.99.01", "580.159.04", -1), ("G520.0282.02.03", INFOROM, 1),
    ("G520.0282.02.02", "G525.0200.00.01", None), ("96.00", VBIOS, None),
])
def test_version_order(first, second, order):
    assert compare_versions(first, second) == order


def test_the_baseline_schema_takes_a_firmware_pin_with_its_source(tmp_path):
    validator = schema_validator("baseline.schema.json")
    document = load_yaml(os.path.join(ROOT, "baselines", "h200-sxm.yaml"))
    document["firmware"] = {"vbios": {"allowed": [VBIOS], "source": "seen on the rig"}, "gsp": {"minimum": GSP, "source": "s"}}
    assert list(validator.iter_errors(document)) == []
    for broken in ({"vbios": {"allowed": [VBIOS]}}, {"vbios": {"allowed": [VBIOS], "minimum": VBIOS, "source": "s"}},
                   {"vbios": {"source": "s"}}, {"nvswitch": {"allowed": ["x"], "source": "s"}}, {},
                   {"gsp": {"minimum": 580.1, "source": "s"}}):
        document["firmware"] = broken
        assert list(validator.iter_errors(document)), broken
    # a pinned baseline loads and reaches the check through the judge
    document["firmware"] = {"vbios": {"allowed": [OTHER_VBIOS], "source": "a fleet decision"}}
    for name in os.listdir(os.path.join(ROOT, "baselines")):
        with open(os.path.join(ROOT, "baselines", name), encoding="utf-8") as handle:
            (tmp_path / name).write_text(handle.read(), encoding="utf-8")
    (tmp_path / "h200-sxm.yaml").write_text(yaml.safe_dump(document), encoding="utf-8")
    loaded, problems = load_baselines(str(tmp_path))
    assert problems == []
    hosts = {"rig": _fleet_host(1)}
    verdict = judge_fleet("run2", hosts, loaded, rules()).hosts["rig"]
    check = one(verdict, "health.firmware_pinned", 0)
    assert (check.status, check.value, check.reference) == ("fail", VBIOS, OTHER_VBIOS)
    assert check.reference_source == ("%s (gpufleet_baselines_dir, in place of the shipped baselines/h200-sxm.yaml) firmware.vbios "
                                      "(a fleet decision)" % (tmp_path / "h200-sxm.yaml"))
    assert verdict.verdict == "fail"
