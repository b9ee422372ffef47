"""Drift needs the same host's previous result: the newest earlier run where the host was reached, and for a probe that
run did not measure, the newest earlier run that did."""
import json
import os

from ansible_collections.gpufleet.validation.plugins.plugin_utils.store.previous import (
    earlier_runs,
    find_previous_results,
    most_common_run,
    previous_results,
)


def write_result(results, run_id, host_dir, status="ok", probe="health"):
    path = results / run_id / host_dir
    path.mkdir(parents=True, exist_ok=True)
    (path / (probe + ".json")).write_text(json.dumps({"status": status, "run_id": run_id, "probe": probe}))


def test_earlier_runs_are_newest_first_and_exclude_the_current_one_and_links(tmp_path):
    for run_id in ("20261128T010000Z-1", "20261129T010000Z-2", "20261130T010000Z-3", "20261201T010000Z-4"):
        write_result(tmp_path, run_id, "node-01")
    os.symlink("20261130T010000Z-3", str(tmp_path / "latest"))
    assert earlier_runs(str(tmp_path), "20261130T010000Z-3") == ["20261129T010000Z-2", "20261128T010000Z-1"]


def test_each_host_gets_its_newest_earlier_run_that_measured_something(tmp_path):
    write_result(tmp_path, "20261128T010000Z-1", "node-01")
    write_result(tmp_path, "20261128T010000Z-1", "node-02")
    write_result(tmp_path, "20261129T010000Z-2", "node-01")
    write_result(tmp_path, "20261129T010000Z-2", "node-02", status="unreachable")
    write_result(tmp_path, "20261129T120000Z-4", "node-02", status="unavailable")
    write_result(tmp_path, "20261130T010000Z-3", "node-01")
    envelopes, run_ids = previous_results(str(tmp_path), "20261130T010000Z-3", ["node-01", "node-02", "node-03"])
    assert run_ids == {"node-01": "20261129T010000Z-2", "node-02": "20261128T010000Z-1"}
    assert envelopes["node-02"]["health"]["run_id"] == "20261128T010000Z-1"
    assert "node-03" not in envelopes
    assert most_common_run(run_ids) == "20261128T010000Z-1"


def test_a_host_name_with_a_slash_is_found_under_its_encoded_directory(tmp_path):
    write_result(tmp_path, "20261129T010000Z-2", "rack%2Fnode")
    envelopes, run_ids = previous_results(str(tmp_path), "20261130T010000Z-3", ["rack/node"])
    assert run_ids == {"rack/node": "20261129T010000Z-2"}


def test_no_results_directory_means_no_previous_run(tmp_path):
    assert previous_results(str(tmp_path / "missing"), "r1", ["node-01"]) == ({}, {})


def test_a_wanted_probe_the_previous_run_did_not_measure_comes_from_the_newest_earlier_run_that_did(tmp_path):
    """Issue 31: a post_upgrade run after a health run compares membw with the last run that measured membw."""
    for run_id in ("20261127T010000Z-1", "20261128T010000Z-2"):
        write_result(tmp_path, run_id, "node-01")
        write_result(tmp_path, run_id, "node-01", probe="membw")
    write_result(tmp_path, "20261128T010000Z-2", "node-01", probe="tuning", status="unavailable")
    write_result(tmp_path, "20261129T010000Z-3", "node-01")  # a health run
    write_result(tmp_path, "20261129T010000Z-3", "node-01", probe="tuning", status="unavailable")
    write_result(tmp_path, "20261129T010000Z-3", "node-02")
    found = find_previous_results(str(tmp_path), "20261130T010000Z-4", ["node-01", "node-02"],
                                  wanted={"node-01": ["health", "membw", "tuning", "p2p"], "node-02": ["health", "membw"]})
    assert found.run_ids == {"node-01": "20261129T010000Z-3", "node-02": "20261129T010000Z-3"}
    node = found.envelopes["node-01"]
    assert {probe: node[probe]["run_id"] for probe in node} == {
        "health": "20261129T010000Z-3", "membw": "20261128T010000Z-2", "tuning": "20261129T010000Z-3"}
    assert node["tuning"]["status"] == "unavailable"  # no earlier run measured it: the previous run's result stays
    assert sorted(found.envelopes["node-02"]) == ["health"] and found.problems == {}
    # Without wanted, each host's previous run alone, as before.
    alone = find_previous_results(str(tmp_path), "20261130T010000Z-4", ["node-01"])
    assert sorted(alone.envelopes["node-01"]) == ["health", "tuning"]


def test_an_unreadable_older_result_of_a_wanted_probe_is_a_problem_and_a_linked_host_folder_is_not_read(tmp_path):
    write_result(tmp_path, "20261126T010000Z-0", "node-01", probe="membw")
    write_result(tmp_path, "20261126T010000Z-0", "node-02", probe="membw")
    write_result(tmp_path, "20261127T010000Z-1", "node-01")
    (tmp_path / "20261127T010000Z-1" / "node-01" / "membw.json").write_text("{not json")
    write_result(tmp_path, "20261128T010000Z-2", "node-01")
    write_result(tmp_path, "20261128T010000Z-2", "node-02")
    elsewhere = tmp_path / "elsewhere"
    write_result(elsewhere, "x", "node-02", probe="membw")
    os.symlink(str(elsewhere / "x" / "node-02"), str(tmp_path / "20261127T010000Z-1" / "node-02"))
    found = find_previous_results(str(tmp_path), "20261130T010000Z-4", ["node-01", "node-02"],
                                  wanted={"node-01": ["health", "membw"], "node-02": ["health", "membw"]})
    assert sorted(found.envelopes["node-01"]) == ["health"]
    assert list(found.problems["node-01"]) == ["membw"]
    assert found.problems["node-01"]["membw"].startswith("previous run's membw.json is unreadable: ")
    assert found.problems["node-01"]["membw"].endswith("(run 20261127T010000Z-1)")
    assert found.envelopes["node-02"]["membw"]["run_id"] == "20261126T010000Z-0"  # past the link, to the real older run
