"""Shared helpers for the judge tests: recorded health results, the rigs' recorded results of the other probes (the
builders' starting point), baselines, rules."""
from __future__ import annotations

import copy
import json
import os

from ansible_collections.gpufleet.validation.plugins.plugin_utils.judge import fleet
from ansible_collections.gpufleet.validation.plugins.plugin_utils.probe_kit.registry import probe_catalogue
from ansible_collections.gpufleet.validation.plugins.plugin_utils.rules_and_baselines import load_baselines, load_rules


def judge_fleet(*args, **kwargs):
    """The judge as the report runs it: told about the probes by their declarations."""
    return fleet.judge_fleet(*args, catalogue=probe_catalogue(), **kwargs)


HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(HERE)))
FIXTURES = os.path.join(ROOT, "tests", "fixtures")
RUN_OK = "20261130T025347Z-985490"
GPU0 = "GPU-8eb0778b-d464-b2c2-c1ff-53da4ffb64cd"
GPU1 = "GPU-c2d869be-1bd4-aefd-e552-306f4e15e127"
# The rig is a 2-GPU slice of an HGX board: its inventory says so.
RIG_OVERRIDES = {"health.gpu_count": {"params": {"expected": 2}}}


def fixture(name: str) -> dict:
    with open(os.path.join(FIXTURES, name), encoding="utf-8") as handle:
        return json.load(handle)


def health_ok() -> dict:
    return copy.deepcopy(fixture("health_h200x2_ok_by_the_action.json"))


def as_machine(envelope: dict, number: int) -> dict:
    """The envelope as machine n's: its GPUs get their own UUIDs and serials (hosts that report the same GPUs are one
    machine to the judge, fleet.same_gpus)."""
    for gpu in envelope["data"]["gpus"]:
        gpu["uuid"] = "GPU-%08d-%s" % (number, gpu["uuid"][13:])
        gpu["serial"] = "%07d%06d" % (number, gpu["index"])
    return envelope


def health_unavailable() -> dict:
    return copy.deepcopy(fixture("health_h200x2_unavailable_without_pynvml.json"))


# tests/fixtures/ holds the recorded health results only; the other probes' whole recorded results are the rigs' runs
# under docs/examples/ (as test_verdict_matrix reads them): the 2-GPU H200 rig's acceptance run, every probe ok, and the
# 1-GPU rig's run on the final code (gemm with its burst and sustained states).
H200X2_RUN = os.path.join(ROOT, "docs", "examples", "h200x2", "20261130T054132Z-520925", "localhost")
H200X1_RUN = os.path.join(ROOT, "docs", "examples", "h200x1", "final", "20261201T090639Z-551803", "localhost")


def _read(path: str) -> str:
    with open(path, encoding="utf-8") as handle:
        return handle.read()


def recorded(probe: str, run: str = H200X2_RUN, host: str = "rig") -> dict:
    """A fresh copy of the rig's recorded `probe` result (store envelope and all) for host `host`, its GPUs renamed to
    the recorded health result's GPU0, GPU1 (by index), so that the judge matches them to health_ok()'s GPUs."""
    text = _read(os.path.join(run, probe + ".json"))
    health = json.loads(_read(os.path.join(run, "health.json")))
    for gpu, uuid in zip(health["data"]["gpus"], (GPU0, GPU1)):
        text = text.replace(gpu["uuid"], uuid)
    envelope = json.loads(text)
    envelope["host"] = host
    return envelope


def baselines() -> list:
    loaded, problems = load_baselines(os.path.join(ROOT, "baselines"))
    assert problems == []
    return loaded


def rules() -> dict:
    return load_rules()


def judge_one(envelope: dict, overrides=None, rule_document=None, **kwargs):
    """Judge one host "rig" with one health envelope; returns its HostVerdict (and the judgement as .judgement)."""
    hosts = {"rig": {"envelopes": {"health": envelope}, "reached": True, "reason": "", "groups": ["rack1"],
                     "rule_overrides": RIG_OVERRIDES if overrides is None else overrides}}
    judgement = judge_fleet("run2", hosts, baselines(), rule_document or rules(), **kwargs)
    verdict = judgement.hosts["rig"]
    verdict.judgement = judgement
    return verdict


def checks_of(verdict, check_id: str, gpu_index=None) -> list:
    return [check for check in verdict.checks if check.id == check_id and (gpu_index is None or check.gpu_index == gpu_index)]


def one(verdict, check_id: str, gpu_index=None):
    found = checks_of(verdict, check_id, gpu_index)
    assert len(found) == 1, (check_id, gpu_index, [c.to_dict() for c in verdict.checks if c.id == check_id])
    return found[0]
