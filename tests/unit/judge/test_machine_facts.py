"""The judge learns the machine (its SKU, the GPUs it should have, their identities and drift) from the one probe that
declares it describes the machine (judge/machine_facts.py), never from a probe's name (issue 33)."""
from __future__ import annotations

import dataclasses
import json

import pytest

from ansible_collections.gpufleet.validation.plugins.plugin_utils.judge import fleet
from ansible_collections.gpufleet.validation.plugins.plugin_utils.judge.machine_facts import Machine
from ansible_collections.gpufleet.validation.plugins.plugin_utils.probe_kit.declaration import DeclarationError
from ansible_collections.gpufleet.validation.plugins.plugin_utils.probe_kit.registry import judging_of, machine_of, probe_catalogue, with_derived_params
from helpers import RIG_OVERRIDES, as_machine, baselines, health_ok, rules


def gemm_inputs(host_dir, params, handed_baselines):
    """gemm's derivation as the probe action runs it: the core identifies the SKU and hands it the baseline."""
    return with_derived_params("gemm", host_dir, params, handed_baselines)


def _renamed(catalogue, old, new):
    """The catalogue with the probe old known as new: what the judge finds must follow the declaration."""
    def moved(mapping):
        return {new if name == old else name: value for name, value in mapping.items()}
    return dataclasses.replace(catalogue, checks=moved(catalogue.checks), metrics=moved(catalogue.metrics),
                               settings=moved(catalogue.settings), machine=Machine(new, catalogue.machine.declaration))


def _judge(catalogue, probe, previous=None):
    hosts = {"rig": {"envelopes": {probe: as_machine(health_ok(), 1)}, "reached": True, "groups": [],
                     "rule_overrides": RIG_OVERRIDES}}
    return fleet.judge_fleet("run2", hosts, baselines(), rules(), previous=previous, previous_run_id="run1",
                             catalogue=catalogue).hosts["rig"]


def test_exactly_one_probe_describes_the_machine_and_the_registry_refuses_a_second():
    assert probe_catalogue().machine_probe == "health"
    health = judging_of("health")
    assert machine_of({"health": health, "gemm": judging_of("gemm")}).probe == "health"
    assert machine_of({"gemm": judging_of("gemm")}) is None
    with pytest.raises(DeclarationError, match="health and inventory each declare machine="):
        machine_of({"health": health, "inventory": health})


def test_the_sku_and_the_machine_s_drift_come_from_the_declaring_probe_whatever_its_name():
    catalogue = _renamed(probe_catalogue(), "health", "inventory")
    earlier = {"rig": {"inventory": as_machine(health_ok(), 1)}}
    renamed = _judge(catalogue, "inventory", earlier)
    assert renamed.sku == "h200-sxm" and renamed.sku_reason.startswith("2 x NVIDIA H200")
    drift = [(check.id, check.probe, check.status) for check in renamed.checks if check.id in ("drift.gpus", "drift.device_majors")]
    assert drift == [("drift.gpus", "inventory", "pass"), ("drift.device_majors", "inventory", "pass")]
    # the same host under the probe's own name: the same SKU and drift
    own = _judge(probe_catalogue(), "health", {"rig": {"health": as_machine(health_ok(), 1)}})
    assert (own.sku, own.sku_reason) == (renamed.sku, renamed.sku_reason)


def test_without_a_probe_that_describes_the_machine_no_sku_is_identified_and_says_why():
    catalogue = dataclasses.replace(probe_catalogue(), machine=None)
    verdict = _judge(catalogue, "health")
    assert verdict.sku is None and verdict.sku_reason == "no probe describes the machine, so no SKU"


def test_gemm_s_derived_peaks_come_from_the_sku_of_the_machine_s_probe_result(tmp_path):
    (tmp_path / "health.json").write_text(json.dumps(health_ok()), encoding="utf-8")
    params, notes = gemm_inputs(str(tmp_path), {"memory_bandwidth_gbps": {"cpu": 100.0}}, baselines)
    assert params["peak_tflops"]["bf16"] == 989.0
    assert notes == ["peak_tflops from baselines/h200-sxm.yaml (SKU identified from this run's health result)"]
    assert gemm_inputs(str(tmp_path / "nothing"), {"memory_bandwidth_gbps": {"cpu": 100.0}}, baselines) == (
        {"memory_bandwidth_gbps": {"cpu": 100.0}}, [])


def test_gemm_s_derived_peaks_come_from_the_baselines_the_core_hands_it_and_only_when_it_needs_them(tmp_path):
    """Issue 47: gemm's package loads no baseline file itself; what it is handed is what it derives from."""
    (tmp_path / "health.json").write_text(json.dumps(health_ok()), encoding="utf-8")
    handed = baselines()
    next(baseline for baseline in handed if baseline["id"] == "h200-sxm")["datasheet"]["bf16_dense"]["value"] = 123.0
    params, unused_notes = gemm_inputs(str(tmp_path), {"memory_bandwidth_gbps": {"cpu": 100.0}}, lambda: handed)
    assert params["peak_tflops"]["bf16"] == 123.0

    def unread():
        raise AssertionError("the baselines were read although the user gave the peaks")
    given = {"memory_bandwidth_gbps": {"cpu": 100.0}, "peak_tflops": {"bf16": 1.0}}
    assert gemm_inputs(str(tmp_path), given, unread) == (given, [])
