"""Issue 48 point 6: a 30-night history of 6 hosts judged as the report judges (judge_run with the run index's reader,
fleet.json written, the index updated after each run), with a slow decay, a returning fault and a flapping host
injected: each is named by its trend check, and nothing else is. The hosts' results are real recordings of an H200
acceptance run (benchmarks/synthetic_acceptance_host.py), two GPUs each, with the injections made in their values."""
from __future__ import annotations

import json
import os
import random
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
sys.path.insert(0, os.path.join(ROOT, "benchmarks"))

from synthetic_acceptance_host import ACCEPTANCE_RUN, acceptance_host_results  # noqa: E402

from ansible_collections.gpufleet.validation.plugins.plugin_utils.history.index import connect, update_index  # noqa: E402
from ansible_collections.gpufleet.validation.plugins.plugin_utils.history.report_update import trend_history  # noqa: E402
from ansible_collections.gpufleet.validation.plugins.plugin_utils.history.trend_reader import IndexHistory  # noqa: E402
from ansible_collections.gpufleet.validation.plugins.plugin_utils.report.exports import fleet_json_text  # noqa: E402
from ansible_collections.gpufleet.validation.plugins.plugin_utils.run_judgement import judge_run  # noqa: E402
from ansible_collections.gpufleet.validation.plugins.plugin_utils.store.atomic import text_writer_below  # noqa: E402
from ansible_collections.gpufleet.validation.plugins.plugin_utils.store.stored_run import load_run  # noqa: E402

HOSTS = ("gpu-a", "gpu-b", "gpu-c", "gpu-d", "gpu-e", "gpu-f")
NIGHTS = 30
DECAYING, RETURNING, FLAPPING = "gpu-a", "gpu-b", "gpu-c"
ECC_NIGHTS = (8, 16, 29)          # gpu-b's ECC fault: back after passing nights, twice
FLAP_FROM = 20                    # gpu-c: persistence mode off every other night from here
# the recordings are of 2 of a machine's 8 H200s (benchmarks/synthetic_acceptance_host.py)
TWO_GPUS = {"health.gpu_count": {"params": {"expected": 2}}}


def _scaled(value, factor):
    """Every bandwidth (a *_gbps number or list) of a result scaled by factor."""
    if isinstance(value, dict):
        return {key: (_scale_number(item, factor) if key.endswith("gbps") else _scaled(item, factor)) for key, item in value.items()}
    if isinstance(value, list):
        return [_scaled(item, factor) for item in value]
    return value


def _scale_number(value, factor):
    if isinstance(value, list):
        return [_scale_number(item, factor) for item in value]
    return value * factor if isinstance(value, (int, float)) and not isinstance(value, bool) else _scaled(value, factor)


def _write_night(results_dir, run_id, night, noise):
    for number, host in enumerate(HOSTS):
        results = acceptance_host_results(host, gpus=2, host_number=number + 10, run_id=run_id)
        decay = 1.0 - 0.001 * night if host == DECAYING else 1.0          # -3 % a month
        results["membw"] = _scaled(results["membw"], decay * (1 + noise.gauss(0, 0.001)))
        for contract in results["toolchain"]["data"]["contracts"]:   # recorded on one of the two GPUs
            if "cuda_device_count" in (contract.get("details") or {}):
                contract["details"].update(cuda_device_count=2, cuda_uuids=[gpu["uuid"] for gpu in results["health"]["data"]["gpus"]])
        gpu = results["health"]["data"]["gpus"][0]
        if host == RETURNING and night in ECC_NIGHTS:
            gpu["ecc"]["volatile_uncorrected_count"] = 3
        if host == FLAPPING and night >= FLAP_FROM and night % 2:
            gpu["persistence_mode"] = "disabled"
        path = os.path.join(results_dir, run_id, host)
        os.makedirs(path)
        for probe, envelope in results.items():
            with open(os.path.join(path, probe + ".json"), "w", encoding="utf-8") as handle:
                json.dump(envelope, handle)
        with open(os.path.join(ACCEPTANCE_RUN, "inputs.json"), encoding="utf-8") as handle:
            inputs = dict(json.load(handle), host=host, dir_name=host)
        with open(os.path.join(path, "inputs.json"), "w", encoding="utf-8") as handle:
            json.dump(inputs, handle)


def _judge_night(results_dir, run_id):
    """What the report action does with a run, the dossiers aside: judged with the index's trend history, fleet.json
    written, the index updated."""
    run = load_run(os.path.join(results_dir, run_id), list(HOSTS), {})
    overrides = {host: TWO_GPUS for host in HOSTS}
    judgement = judge_run(run, results_dir, overrides, workers=1, profile="quick", trend_history=trend_history(results_dir, run_id, overrides))
    text_writer_below(results_dir)(os.path.join(results_dir, run_id, "fleet.json"), fleet_json_text(judgement, run))
    update_index(results_dir, run_id=run_id)
    return judgement


@pytest.fixture(name="nights", scope="module")
def nights_fixture(tmp_path_factory):
    results = str(tmp_path_factory.mktemp("nights") / "results")
    noise = random.Random(7)
    judgements = []
    for night in range(NIGHTS):
        run_id = "202611%02dT020000Z-n%02d" % (night + 1, night)
        _write_night(results, run_id, night, noise)
        judgements.append(_judge_night(results, run_id))
    return results, judgements


def fired(judgement):
    return {(host, check.id) for host, verdict in judgement.hosts.items() for check in verdict.checks
            if check.id.startswith("history.") and check.status not in ("pass", "skip")}


def test_each_injected_trend_is_named_and_nothing_else(nights):
    unused, judgements = nights
    last = judgements[-1]
    assert fired(last) == {(DECAYING, "history.slow_decay"), (DECAYING, "history.slowest_of_group"),
                           (RETURNING, "history.returning_fault"), (FLAPPING, "history.flapping")}
    decay = next(check for check in last.hosts[DECAYING].checks if check.id == "history.slow_decay")
    assert -3.2 < decay.value < -2.6 and "Memory bandwidth -2." in decay.reason and "over 14 runs, 20261117T020000Z-n16 to this run / 30 days" in decay.reason
    assert "reaches the fail floor" in decay.reason
    returning = next(check for check in last.hosts[RETURNING].checks if check.id == "history.returning_fault")
    assert "health.ecc_volatile_uncorrected came back 2 times after the host was back in service (20261109T020000Z-n08, " \
           "20261117T020000Z-n16, and this run)" in returning.reason
    assert last.texts.of("history.returning_fault").action == "service"
    assert last.hosts[RETURNING].verdict == "fail"
    # the escalation leads the reasons: what a Slurm drain reason names (act/slurm_plan.drain_reason)
    assert last.hosts[RETURNING].reasons[0].startswith("history.returning_fault: health.ecc_volatile_uncorrected came back 2 times")
    flapping = next(check for check in last.hosts[FLAPPING].checks if check.id == "history.flapping")
    assert "its verdict changed 9 times in the last 10 runs" in flapping.reason
    # the night before, its measurements passed: the warn is flapping's alone, and what the next nights count is "pass"
    assert (judgements[-2].hosts[FLAPPING].measured_verdict, judgements[-2].hosts[FLAPPING].verdict) == ("pass", "warn")


def test_the_healthy_hosts_pass_every_trend_check_once_they_have_runs_enough(nights):
    unused, judgements = nights
    for host in ("gpu-d", "gpu-e", "gpu-f"):
        statuses = {check.id: check.status for check in judgements[-1].hosts[host].checks if check.id.startswith("history.")}
        assert statuses == {"history.slow_decay": "pass", "history.returning_fault": "pass", "history.flapping": "pass",
                            "history.slowest_of_group": "pass"}, host
    # nothing before a trend has runs enough: slow decay needs 8 (min_runs), the others more
    assert [fired(judgement) for judgement in judgements[:7]] == [set()] * 7


def test_the_first_run_skips_saying_so_and_a_decay_is_seen_before_the_floor_fails(nights):
    unused, judgements = nights
    first = {check.id: check for check in judgements[0].hosts["gpu-d"].checks if check.id.startswith("history.")}
    assert first["history.slow_decay"].status == "skip" and "this is the first run in its results directory" in first["history.slow_decay"].reason
    decayed = [night for night, judgement in enumerate(judgements) if (DECAYING, "history.slow_decay") in fired(judgement)]
    assert decayed and decayed[0] <= 10
    assert not any(check.id == "membw.bandwidth" and check.status == "fail" for check in judgements[-1].hosts[DECAYING].checks)


def test_the_reader_gives_the_index_s_runs_newest_first(nights):
    results, unused = nights
    runs = sorted(run for run in os.listdir(results) if run.startswith("2026"))
    reader = IndexHistory(results, "20261201T020000Z-x", runs, 60, ["membw.bandwidth_gbps"])
    history = reader.of(RETURNING)
    assert [run.run_id for run in history.runs][:3] == runs[::-1][:3] and len(history.runs) == NIGHTS
    by_id = {run.run_id: run for run in history.runs}
    assert by_id["20261109T020000Z-n08"].faults == ("health.ecc_volatile_uncorrected",)
    assert by_id["20261130T020000Z-n29"].measured_verdict == "fail" and by_id["20261110T020000Z-n09"].measured_verdict == "pass"
    assert sorted(history.series) == [("membw.bandwidth_gbps", "GPU-0000000b-0000-0000-0000-000000000000"),
                                      ("membw.bandwidth_gbps", "GPU-0000000b-0001-0000-0000-000000000001")]
    points = history.series[("membw.bandwidth_gbps", "GPU-0000000b-0000-0000-0000-000000000000")]
    assert len(points) == NIGHTS and points[0][2] == "20261130T020000Z-n29" and points[-1][2] == "20261101T020000Z-n00"
    assert reader.of("no-such-host").problem == "no earlier run of this host is in the run index"
    connection = connect(results)
    try:
        assert connection.execute("SELECT count(*) FROM statistics WHERE metric_id = 'membw.bandwidth_gbps'").fetchone()[0] == NIGHTS
        lowest = connection.execute("SELECT lowest FROM hosts WHERE host = ? AND run_id = ?", (DECAYING, runs[-1])).fetchone()[0]
    finally:
        connection.close()
    assert "membw.bandwidth_gbps" in json.loads(lowest)


def test_an_unreadable_index_skips_every_trend_check_with_why(tmp_path):
    (tmp_path / ".gpufleet-history.sqlite3").write_text("not a database")
    history = IndexHistory(str(tmp_path), "20261201T020000Z-x", ["20261130T020000Z-y"], 10, []).of("h")
    assert history.problem.startswith("the run index could not be read")
