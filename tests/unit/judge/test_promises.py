"""Issue 44: a pass is a proof. A host passes only when every headline its profile promises was judged on it, in this
run, against a reference with a source; anything less is not_validated, and says why and how to fix it.

Judged the way the report judges (load_run + judge_run) on the rig's recorded 1-GPU H200 acceptance run, healthy, then
changed the way the issue found it: an H100 whose baseline has no reference for five headlines, a baseline that is
ambiguous, a promised rule disabled or downgraded, a probe that left no result.
"""
import json
import os
import shutil
from dataclasses import asdict, fields

import pytest
import yaml

from ansible_collections.gpufleet.validation.plugins.plugin_utils.judge.model import Check, Proof, blocks_gate
from ansible_collections.gpufleet.validation.plugins.plugin_utils.judge.promises import HostFacts, Promise, prove
from ansible_collections.gpufleet.validation.plugins.plugin_utils.report.exports import fleet_json
from ansible_collections.gpufleet.validation.plugins.plugin_utils.run_judgement import host_promises, judge_run, promised_probes
from ansible_collections.gpufleet.validation.plugins.plugin_utils.store.stored_run import load_run

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
RECORDED = os.path.join(ROOT, "docs", "examples", "h200x1", "issue35", "cuts", "20261204T121144Z-595230")
RUN_ID = os.path.basename(RECORDED)
HEADLINES = {"health.cuda_init", "health.device_majors", "health.gpu_count", "membw.bandwidth", "memtest.errors",
             "gemm.bf16_burst", "gemm.bf16_sustained", "gemm.fp8_burst", "gemm.fp8_sustained", "gemm.correctness",
             "hostbw.pinned_h2d", "hostbw.pinned_d2h", "load.correctness"}
BETWEEN_GPUS = {"p2p.unidirectional", "p2p.bidirectional", "collective.verified", "collective.busbw"}
# The five headline checks the H100 rig skipped "for want of a reference" before issue 44 (its baseline had none).
H100_UNREFERENCED = {"membw.bandwidth", "hostbw.pinned_h2d", "hostbw.pinned_d2h", "gemm.bf16_sustained", "gemm.fp8_sustained"}


def _copy(tmp_path):
    results = tmp_path / "results"
    shutil.copytree(RECORDED, str(results / RUN_ID), symlinks=True)
    return str(results), str(results / RUN_ID)


def _judged(results, run_path, overrides=None, baselines_dir=None, profile=None):
    run = load_run(run_path, ["localhost"], {})
    judgement = judge_run(run, results, {"localhost": overrides or {}}, baselines_dir, workers=1, profile=profile)
    return judgement.hosts["localhost"]


def _states(verdict):
    return {state: {proof.check for proof in verdict.proofs_in(state)} for state in ("proven", "not_proven", "not_promised")}


def _as_h100(run_path):
    """The recorded H200 result relabelled as the H100 80GB HBM3 the issue ran on (name, PCI device id, memory)."""
    path = os.path.join(run_path, "localhost", "health.json")
    with open(path, encoding="utf-8") as handle:
        envelope = json.load(handle)
    for gpu in envelope["data"]["gpus"]:
        gpu["name"], gpu["pci"]["device_id"], gpu["memory"]["total_mib"] = "NVIDIA H100 80GB HBM3", "0x233010de", 81559
    with open(path, "w", encoding="utf-8") as handle:
        json.dump(envelope, handle)


def _baselines_folder(tmp_path, edit=None):
    folder = tmp_path / "baselines"
    shutil.copytree(os.path.join(ROOT, "baselines"), str(folder))
    if edit is not None:
        edit(folder)
    return str(folder)


def test_the_healthy_rig_run_proves_every_headline_and_passes(tmp_path):
    verdict = _judged(*_copy(tmp_path))
    states = _states(verdict)
    assert verdict.verdict == "pass", verdict.reasons
    assert states["proven"] == HEADLINES and states["not_proven"] == set()
    # one GPU: the headlines measured between GPUs are not promised, and say why
    assert states["not_promised"] == BETWEEN_GPUS
    assert all("at least 2 needed" in proof.because for proof in verdict.proofs_in("not_promised"))
    assert not blocks_gate(verdict)


def test_an_h100_without_references_for_five_headlines_is_not_validated_not_passed(tmp_path):
    """The issue's H100: five headline checks skipped for want of a reference and the host passed acceptance."""
    results, run_path = _copy(tmp_path)
    _as_h100(run_path)

    def strip(folder):
        path = os.path.join(str(folder), "h100-sxm.yaml")
        with open(path, encoding="utf-8") as handle:
            document = yaml.safe_load(handle)
        for key in ("torch_copy_4gib", "bf16_matmul_sustained", "fp8_matmul_sustained", "nvbandwidth_h2d_ce", "nvbandwidth_d2h_ce"):
            document["known_good"].pop(key, None)
        with open(path, "w", encoding="utf-8") as handle:
            yaml.safe_dump(document, handle)
    verdict = _judged(results, run_path, baselines_dir=_baselines_folder(tmp_path, strip))
    assert verdict.sku == "h100-sxm"
    assert verdict.verdict == "not_validated" and blocks_gate(verdict)
    assert _states(verdict)["not_proven"] == H100_UNREFERENCED
    for proof in verdict.proofs_in("not_proven"):
        assert "no known-good value" in proof.because and "h100-sxm" in proof.fix and "playbooks/calibrate.yml" in proof.fix
    assert verdict.reasons[0].startswith("not proven: ")


def test_the_shipped_h100_baseline_references_every_headline(tmp_path):
    """With the references this issue added (datasheet floors or the rig's measurements), the H100 proves them all."""
    results, run_path = _copy(tmp_path)
    _as_h100(run_path)
    verdict = _judged(results, run_path)
    assert verdict.sku == "h100-sxm" and _states(verdict)["not_proven"] == set(), verdict.reasons


def test_an_ambiguous_baseline_is_not_a_peer_only_pass(tmp_path):
    """A user's folder adds a second file whose match also matches the H200: the SKU is unknown, nothing has a
    known-good value, and the host is not validated (it passed on its peers before)."""
    results, run_path = _copy(tmp_path)

    def twin(folder):
        with open(os.path.join(str(folder), "h200-sxm.yaml"), encoding="utf-8") as handle:
            document = yaml.safe_load(handle)
        document["id"] = "h200-twin"
        with open(os.path.join(str(folder), "h200-twin.yaml"), "w", encoding="utf-8") as handle:
            yaml.safe_dump(document, handle)
    verdict = _judged(results, run_path, baselines_dir=_baselines_folder(tmp_path, twin))
    assert verdict.sku is None and verdict.verdict == "not_validated"
    unproven = verdict.proofs_in("not_proven")
    assert {proof.check for proof in unproven} >= {"membw.bandwidth", "gemm.bf16_burst", "hostbw.pinned_h2d"}
    assert any("h200-twin" in proof.because or "h200-twin" in proof.fix for proof in unproven)


@pytest.mark.parametrize("override, words", [
    ({"membw.bandwidth": {"enabled": False}}, "is disabled by this host's rule overrides"),
    ({"membw.bandwidth": {"severity": "warn"}}, "severity is warn by this host's rule overrides"),
])
def test_a_promised_rule_disabled_or_downgraded_leaves_it_not_proven(tmp_path, override, words):
    verdict = _judged(*_copy(tmp_path), overrides=override)
    assert verdict.verdict == "not_validated" and blocks_gate(verdict)
    (proof,) = verdict.proofs_in("not_proven")
    assert proof.check == "membw.bandwidth" and words in proof.because and proof.fix


def test_a_probe_that_left_no_result_leaves_its_headlines_not_proven(tmp_path):
    results, run_path = _copy(tmp_path)
    os.remove(os.path.join(run_path, "localhost", "memtest.json"))
    verdict = _judged(results, run_path)
    assert verdict.verdict == "not_validated"
    (proof,) = verdict.proofs_in("not_proven")
    assert proof.check == "memtest.errors" and "left no result" in proof.because


def test_the_profile_given_to_the_report_decides_the_promises(tmp_path):
    results, run_path = _copy(tmp_path)
    os.remove(os.path.join(run_path, "localhost", "memtest.json"))
    verdict = _judged(results, run_path, profile="health")
    assert verdict.verdict == "pass" and _states(verdict)["proven"] == {"health.cuda_init", "health.device_majors", "health.gpu_count"}


def test_the_promised_probes_come_from_what_the_run_recorded(tmp_path):
    unused_results, run_path = _copy(tmp_path)
    host = load_run(run_path, ["localhost"], {}).hosts[0]
    probes, source = promised_probes(host)
    assert "memtest" in probes and "acceptance" in source
    host.inputs["probes"] = ["health", "membw"]
    assert promised_probes(host) == (["health", "membw"], "profile acceptance, as its run recorded it")
    host.inputs = {"profile": "mine"}
    probes, source = promised_probes(host)
    assert probes == sorted(host.probes) and "not one this collection declares" in source
    with pytest.raises(ValueError):
        promised_probes(host, "no-such-profile")
    assert [promise.rule for promise in host_promises(["membw", "nosuchprobe"])] == ["membw.bandwidth"]


def test_fleet_json_carries_what_is_proven_and_what_is_not(tmp_path):
    results, run_path = _copy(tmp_path)
    run = load_run(run_path, ["localhost"], {})
    judgement = judge_run(run, results, {"localhost": {"membw.bandwidth": {"enabled": False}}}, workers=1)
    host = fleet_json(judgement, run)["hosts"]["localhost"]
    assert host["verdict"] == "not_validated" and host["refused_by_gate"] is True
    assert [proof["check"] for proof in host["not_proven"]] == ["membw.bandwidth"]
    assert "membw.bandwidth" not in {proof["check"] for proof in host["proven"]} and len(host["proven"]) == len(HEADLINES) - 1


def _check(status, reference_source="baselines/x.yaml known_good.y (a source)", because=""):
    return Check(id="membw.bandwidth", host="h", probe="membw", status=status, reason="the reason", because=because,
                 reference_source=reference_source)


RULE = {"membw.bandwidth": {"id": "membw.bandwidth", "enabled": True, "severity": "fail", "overridden": []}}


@pytest.mark.parametrize("checks, state", [
    ([_check("pass")], "proven"),
    ([_check("fail")], "proven"),                       # judged: the host fails on it, that is proven too
    ([_check("pass"), _check("skip")], "not_proven"),   # one GPU of two not judged
    ([_check("warn", "the fleet median, for want of a known-good value (membw.bandwidth_gbps)")], "not_proven"),
    ([_check("error")], "not_proven"),
    ([], "not_proven"),
])
def test_a_headline_is_proven_only_where_every_check_of_it_was_judged_against_a_reference(checks, state):
    facts = HostFacts(gpu_count=2, sku="x", outcomes={"membw": {"status": "ok", "reason": None}})
    proof = prove(Promise("membw.bandwidth", "membw"), checks, RULE, facts)
    assert isinstance(proof, Proof) and proof.state == state


def test_a_headline_the_skus_datasheet_lacks_is_not_promised():
    facts = HostFacts(gpu_count=1, sku="a100-sxm-80gb", datasheet=frozenset({"bf16_dense"}))
    proof = prove(Promise("gemm.fp8_burst", "gemm", needs_datasheet="fp8_dense"), [], {}, facts)
    assert proof.state == "not_promised" and "fp8_dense" in proof.because


H100_BUSY = os.path.join(ROOT, "docs", "examples", "h100x1", "issue44", "20261206T185440Z-551911")


def test_a_busy_gpu_says_its_root_cause_once_and_names_every_headline_under_it(tmp_path):
    """The H100 rig's leftover job (60 GiB and a bf16 matmul loop during health, membw and gemm): the verdict's
    reasons repeated the busy words and each measured value once per headline, five long lines under the one cause."""
    results = tmp_path / "results"
    shutil.copytree(H100_BUSY, str(results / os.path.basename(H100_BUSY)), symlinks=True)
    verdict = _judged(str(results), str(results / os.path.basename(H100_BUSY)))
    assert verdict.verdict == "not_validated"
    assert verdict.reasons[0].startswith("health.gpu_processes: GPU 0 ") and "python3 (pid 812, 60 GiB)" in verdict.reasons[0]
    unproven = [line for line in verdict.reasons if line.startswith("not proven: ")]
    # "to fix: see health.gpu_processes, the root cause" would only repeat the line's own words
    assert unproven == ["not proven: membw.bandwidth, gemm.bf16_burst, gemm.bf16_sustained, gemm.fp8_burst, gemm.fp8_sustained: "
                        "each follows from health.gpu_processes, the root cause above"]
    # each proof keeps what was measured in its own words
    for proof in verdict.proofs_in("not_proven"):
        assert proof.root == "health.gpu_processes" and "not validated: busy: python3 (pid 812" in proof.because


def test_a_dtype_the_gpu_computed_is_promised_whatever_the_baseline_s_datasheet_lists():
    """A user's baseline that replaces the shipped h100-sxm and leaves datasheet.fp8_dense out waived the fp8 headlines
    of an H100 that measured fp8: a slow fp8 unit then passed unjudged."""
    facts = HostFacts(gpu_count=1, sku="h100-sxm", datasheet=frozenset({"bf16_dense"}))
    measured = Check(id="gemm.fp8_burst", host="h", probe="gemm", status="skip", value=702.0,
                     reason="no known-good value for SKU h100-sxm (fp8_matmul)")
    proof = prove(Promise("gemm.fp8_burst", "gemm", needs_datasheet="fp8_dense"), [measured],
                  {"gemm.fp8_burst": {"id": "gemm.fp8_burst", "enabled": True, "severity": "fail"}}, facts)
    assert proof.state == "not_proven", proof


def test_a_proofs_dict_holds_every_field_of_a_proof():
    proof = Proof(**{field.name: "v-%s" % field.name for field in fields(Proof)})
    assert proof.to_dict() == asdict(proof)
