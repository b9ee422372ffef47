"""Drift needs the same host's previous result: the newest earlier run where the host was reached."""
import json
import os

from ansible_collections.gpufleet.validation.plugins.plugin_utils.store.previous import (
    earlier_runs,
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
