"""A busy GPU is not a broken GPU (issue 44, point 8): the rig's leftover-job run, rebuilt from the recorded 1-GPU H200
acceptance run. Another process holds 62.8 GiB of GPU 0 and runs a bf16 matmul loop during health, membw and gemm:
the bf16 burst comes out at 37.9 % of the known-good with the power cap engaged in every window. Before the change the
host failed on gemm.bf16_burst with the action "drain"; now the job is the root cause and nothing is judged slow."""
import copy
import json
import os

from ansible_collections.gpufleet.validation.plugins.plugin_utils.judge.busy import NOT_VALIDATED
from ansible_collections.gpufleet.validation.plugins.plugin_utils.judge.rules import CheckTexts
from ansible_collections.gpufleet.validation.plugins.plugin_utils.report.verdicts import host_action

from helpers import ROOT, baselines, judge_fleet, rules

H200X1 = os.path.join(ROOT, "docs", "examples", "h200x1", "final", "20261201T090639Z-551803", "localhost")
ONE_GPU = {"health.gpu_count": {"params": {"expected": 1}}}
JOB = {"pid": 2172, "name": "python3", "used_memory_mib": 64307.2}   # 62.8 GiB
CAPPED = "the software power cap engaged inside 3 of 3 burst windows"


def run():
    envelopes = {}
    for probe in ("health", "membw", "gemm"):
        with open(os.path.join(H200X1, probe + ".json"), encoding="utf-8") as handle:
            envelopes[probe] = json.load(handle)
    return envelopes


def known_good_bf16_burst():
    (h200,) = [baseline for baseline in baselines() if baseline["id"] == "h200-sxm"]
    return h200["known_good"]["bf16_matmul"]["value"]


def record(uuid, before=(JOB,), during=(JOB,)):
    """The foreign_gpu_processes record a measuring probe writes (probes/probelib/measure/foreign_processes.py)."""
    return {"method": "NVML compute processes before and during the measurement", "interval_s": 1.0, "listings": 40,
            "own_pids": [3001], "gpus": [{"nvml_index": 0, "uuid": uuid, "before": [dict(entry) for entry in before],
                                          "during": [dict(entry) for entry in during], "unattributed": []}]}


def busy(envelopes, health_saw_it=True, probes=("membw", "gemm")):
    """The leftover job on GPU 0: in health's process list, in the measuring probes' records, and in gemm's burst."""
    edited = copy.deepcopy(envelopes)
    uuid = edited["health"]["data"]["gpus"][0]["uuid"]
    if health_saw_it:
        edited["health"]["data"]["gpus"][0]["processes"]["compute"] = [dict(JOB)]
    for probe in probes:
        edited[probe]["data"]["foreign_gpu_processes"] = record(uuid)
    burst = edited["gemm"]["data"]["devices"][0]["dtypes"]["bf16"]["power_states"]["burst"]
    slow = round(0.379 * known_good_bf16_burst(), 2)
    burst.update(tflops=slow, repeats_tflops=[slow, slow * 0.99, slow * 1.01], power_cap_reached=True, note=CAPPED)
    return edited


def judged(envelopes, overrides=None, previous=None, hosts=None):
    entries = hosts or {"host": envelopes}
    overrides = ONE_GPU if overrides is None else overrides
    document = {name: {"envelopes": found, "reached": True, "reason": "", "groups": [], "rule_overrides": overrides}
                for name, found in entries.items()}
    return judge_fleet("busy", document, baselines(), rules(), previous=previous)


def checks(verdict, check_id):
    return [check for check in verdict.checks if check.id == check_id]


def test_the_leftover_job_is_the_root_cause_not_a_slow_gpu():
    judgement = judged(busy(run()))
    verdict = judgement.hosts["host"]
    assert verdict.verdict != "fail" and verdict.verdict == "warn", verdict.reasons
    assert verdict.reasons[0].startswith("health.gpu_processes: GPU 0"), verdict.reasons
    assert "python3 (pid 2172, 62.8 GiB)" in verdict.reasons[0]
    assert not any(reason.startswith("gemm.") or reason.startswith("membw.") for reason in verdict.reasons), verdict.reasons
    texts = CheckTexts(rules())
    assert texts.of("health.gpu_processes").action == "rerun_when_idle" and texts.of("gemm.gpu_busy").action == "rerun_when_idle"
    assert host_action(verdict, texts)["action"] == "re-run when the GPU is idle"
    (burst,) = checks(verdict, "gemm.bf16_burst")
    assert burst.status == "skip" and burst.reason.startswith(NOT_VALIDATED), burst.reason
    assert "python3 (pid 2172, 62.8 GiB)" in burst.reason and "37.9 %" in burst.reason
    assert burst.because == "health.gpu_processes"
    for check_id in ("gemm.bf16_sustained", "gemm.fp8_burst", "gemm.fp8_sustained", "membw.bandwidth"):
        for check in checks(verdict, check_id):
            assert check.status == "skip" and check.reason.startswith(NOT_VALIDATED), check
            assert check.because == "health.gpu_processes", check
    for probe in ("gemm", "membw"):
        (own,) = checks(verdict, probe + ".gpu_busy")
        assert own.status == "warn" and own.because == "health.gpu_processes" and own.action == "rerun_when_idle"
    # correctness is not among the checks a busy GPU distorts: a wrong product is wrong whoever else computes
    assert checks(verdict, "gemm.correctness") and not any(check.reason.startswith(NOT_VALIDATED)
                                                           for check in checks(verdict, "gemm.correctness"))
    assert not any(check.status == "fail" for check in verdict.checks)


def test_without_health_the_probes_own_record_is_the_evidence():
    envelopes = busy(run())
    del envelopes["health"]
    verdict = judged(envelopes, overrides={}).hosts["host"]
    assert verdict.verdict == "warn", verdict.reasons
    assert verdict.reasons[0].startswith("gemm.gpu_busy: not validated: busy: python3 (pid 2172, 62.8 GiB) computed on GPU 0")
    (burst,) = checks(verdict, "gemm.bf16_burst")
    assert burst.status == "skip" and burst.because == "gemm.gpu_busy"
    (own,) = checks(verdict, "gemm.gpu_busy")
    assert own.action == "rerun_when_idle" and own.because == ""


def test_a_job_that_started_after_health_is_still_caught_by_the_measuring_probe():
    verdict = judged(busy(run(), health_saw_it=False)).hosts["host"]
    assert verdict.verdict == "warn", verdict.reasons
    assert {check.status for check in checks(verdict, "health.gpu_processes")} == {"pass"}
    (burst,) = checks(verdict, "gemm.bf16_burst")
    assert burst.status == "skip" and burst.because == "gemm.gpu_busy"


def test_a_gpu_busy_only_before_health_and_idle_while_measured_is_judged():
    """The job ended before membw and gemm measured: their numbers stand (here the recorded healthy ones)."""
    envelopes = run()
    uuid = envelopes["health"]["data"]["gpus"][0]["uuid"]
    envelopes["health"]["data"]["gpus"][0]["processes"]["compute"] = [dict(JOB)]
    for probe in ("membw", "gemm"):
        envelopes[probe]["data"]["foreign_gpu_processes"] = record(uuid, before=(), during=())
    verdict = judged(envelopes).hosts["host"]
    assert {check.status for check in checks(verdict, "gemm.bf16_burst")} == {"pass"}
    assert not checks(verdict, "gemm.gpu_busy")


def test_busy_values_are_neither_a_fleet_outlier_nor_drift():
    healthy = run()
    hosts = {"host%d" % number: copy.deepcopy(healthy) for number in range(1, 5)}
    for number, envelopes in hosts.items():
        for envelope in envelopes.values():  # each host its own GPU (one machine under one name)
            text = json.dumps(envelope).replace(healthy["health"]["data"]["gpus"][0]["uuid"][:12], "GPU-%08d" % int(number[-1]))
            envelope.clear()
            envelope.update(json.loads(text))
        for gpu in envelopes["health"]["data"]["gpus"]:
            gpu["serial"] = "serial-%s" % number
    previous = {"host4": copy.deepcopy(hosts["host4"])}   # its own earlier run, idle
    hosts["host4"] = busy(hosts["host4"])
    judgement = judged(None, hosts=hosts, previous=previous)
    verdict = judgement.hosts["host4"]
    flagged = [check for check in verdict.checks if check.id.startswith(("fleet.", "drift.")) and check.status != "pass"
               and check.status != "skip"]
    assert flagged == [], [(check.id, check.reason) for check in flagged]
    assert verdict.verdict == "warn" and verdict.reasons[0].startswith("health.gpu_processes:")
    assert judgement.hosts["host1"].verdict == "pass", judgement.hosts["host1"].reasons


def test_the_record_is_one_contract_between_the_probes_and_the_judge():
    """The key the runner writes is the key the judge reads; every probe that records it declares it in its schema, and
    every probe whose checks a busy GPU distorts (baseline checks, busy_distorts) records it."""
    import re
    from ansible_collections.gpufleet.validation.plugins.plugin_utils.judge import busy as judge_busy
    from ansible_collections.gpufleet.validation.plugins.plugin_utils.probe_kit.registry import declarations, judging_of
    from probelib.measure import foreign_processes

    assert judge_busy.RECORD_KEY == foreign_processes.RECORD_KEY
    recording = set()
    for name in declarations():
        with open(os.path.join(ROOT, "probes", name + ".py"), encoding="utf-8") as handle:
            if re.search(r"measures_gpus=True", handle.read()):
                recording.add(name)
    for name in sorted(recording):
        with open(os.path.join(ROOT, "schemas", name + ".schema.json"), encoding="utf-8") as handle:
            schema = json.load(handle)
        assert schema["properties"][judge_busy.RECORD_KEY] == {"$ref": "common.schema.json#/$defs/foreign_gpu_processes"}, name
    for name in declarations():
        judging = judging_of(name)
        if judging is not None and (judging.busy_distorts or judging.baseline_checks):
            assert name in recording, "%s judges measurements a busy GPU distorts but does not record the GPUs' processes" % name
    assert {"membw", "gemm", "hostbw", "memtest", "fusion", "load", "p2p", "collective"} <= recording


def test_the_dossier_shows_the_job_first_with_the_measurements_folded_under_it():
    from ansible_collections.gpufleet.validation.plugins.plugin_utils.report.verdicts import verdict_view

    verdict = judged(busy(run())).hosts["host"]
    view = verdict_view(verdict, texts=CheckTexts(rules()))
    first = view["failing"][0]
    assert first["id"] == "health.gpu_processes" and first["action"] == "re-run when the GPU is idle"
    folded = {row["id"]: row for row in first["consequences"]}
    assert folded["gemm.bf16_burst"]["status"] == "skip" and folded["gemm.bf16_burst"]["reason"].startswith(NOT_VALIDATED)
    assert {"gemm.gpu_busy", "membw.gpu_busy", "membw.bandwidth"} <= set(folded)
    assert not any(row["id"] == "gemm.bf16_burst" for row in view["others"])
