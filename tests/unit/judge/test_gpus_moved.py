"""A host whose GPUs another host reported last is not validated (issue 45, point 1): host E's probes wrote host A's
stored results of an earlier run (A not in this run) and E passed acceptance; fleet.same_gpus compared only the hosts
of one run. Judged the way the report judges (load_run + judge_run) on the rig's recorded 1-GPU H200 health result,
stored as host A's in an earlier run and as host E's now."""
import json

from ansible_collections.gpufleet.validation.plugins.plugin_utils.judge.identity_checks import MOVED_CHECK_ID, moved_group
from ansible_collections.gpufleet.validation.plugins.plugin_utils.run_judgement import judge_run
from ansible_collections.gpufleet.validation.plugins.plugin_utils.store.earlier_gpus import ReportedGpus
from ansible_collections.gpufleet.validation.plugins.plugin_utils.store.previous import earlier_runs
from ansible_collections.gpufleet.validation.plugins.plugin_utils.store.stored_run import load_run

EARLIER, NOW = "20261205T010000Z-000001", "20261206T010000Z-000002"


def _judged(results, host):
    run = load_run(str(results / NOW), [host], {})
    return judge_run(run, str(results), {host: {"health.gpu_count": {"params": {"expected": 1}}}}, workers=1).hosts[host]


def test_a_host_reporting_gpus_another_host_reported_last_is_not_validated_naming_it(tmp_path, store_recorded_health):
    results = tmp_path / "results"
    store_recorded_health(results, EARLIER, "node-a")
    store_recorded_health(results, NOW, "node-e")
    verdict = _judged(results, "node-e")
    assert verdict.verdict == "not_validated", verdict.reasons
    assert verdict.reasons[0].startswith("fleet.gpus_moved: not validated: its GPUs were last reported by another host, "
                                         "node-a, in run %s (uuid GPU-" % EARLIER)
    assert "putting this host in the inventory group gpufleet_gpus_from_node_a" in verdict.reasons[0]


def test_a_declared_move_is_validated_as_any_host(tmp_path, store_recorded_health):
    results = tmp_path / "results"
    store_recorded_health(results, EARLIER, "node-a")
    store_recorded_health(results, NOW, "node-e", groups=[moved_group("node-a")])
    verdict = _judged(results, "node-e")
    assert verdict.verdict == "pass", verdict.reasons
    (check,) = [check for check in verdict.checks if check.id == MOVED_CHECK_ID]
    assert check.status == "pass" and "a move declared by inventory group gpufleet_gpus_from_node_a" in check.reason


def test_the_same_host_again_and_a_fresh_gpu_are_no_move(tmp_path, store_recorded_health):
    results = tmp_path / "results"
    store_recorded_health(results, EARLIER, "node-e")
    store_recorded_health(results, NOW, "node-e")
    assert not any(check.id == MOVED_CHECK_ID for check in _judged(results, "node-e").checks)
    fresh = tmp_path / "fresh"
    store_recorded_health(fresh, NOW, "node-e")
    assert not any(check.id == MOVED_CHECK_ID for check in _judged(fresh, "node-e").checks)


def test_the_newest_earlier_report_wins_and_the_search_stops_once_every_gpu_is_found(tmp_path, store_recorded_health):
    """node-a reported the GPU in the oldest run, node-e in the newer one: the GPU is node-e's; the oldest run is never
    read (its health.json is made unreadable)."""
    results = tmp_path / "results"
    store_recorded_health(results, "20261204T010000Z-000000", "node-a")
    store_recorded_health(results, EARLIER, "node-e")
    store_recorded_health(results, NOW, "node-e")
    (results / "20261204T010000Z-000000" / "node-a" / "health.json").write_text("{ not json")
    seen = []

    def identities_of(envelope):
        seen.append(envelope["host"])
        return {"uuid %s" % gpu["uuid"] for gpu in envelope["data"]["gpus"]}
    with open(str(results / EARLIER / "node-e" / "health.json"), encoding="utf-8") as handle:
        uuid = json.load(handle)["data"]["gpus"][0]["uuid"]
    found = ReportedGpus("health", identities_of).last_reporters(str(results), earlier_runs(str(results), NOW), {"uuid %s" % uuid})
    assert found == {"uuid %s" % uuid: (("node-e",), EARLIER)}
    assert seen == ["node-e"]
    assert moved_group("gpu-07.rack-2") == "gpufleet_gpus_from_gpu_07_rack_2"
