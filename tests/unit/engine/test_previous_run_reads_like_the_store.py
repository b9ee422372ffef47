"""The previous run is read back the way the report reads the current one: probe results only (never the store's own
records), never through a link, never more than the result limit."""
import json
import os

from ansible_collections.gpufleet.validation.plugins.plugin_utils.store.previous import find_previous_results
from ansible_collections.gpufleet.validation.plugins.plugin_utils.store.schemas import envelope_problems

HERE = os.path.dirname(os.path.abspath(__file__))
HEALTH_OK = os.path.join(os.path.dirname(os.path.dirname(HERE)), "fixtures", "health_h200x2_ok_by_the_action.json")
OLDER, EARLIER, CURRENT = "20261128T010000Z-000001", "20261129T010000Z-000002", "20261130T010000Z-000003"


def host_dir(results, run_id, host="rig"):
    path = results / run_id / host
    path.mkdir(parents=True, exist_ok=True)
    return path


def write_store_records(path, run_id):
    """What the store writes beside every host's results (docs/store.md)."""
    (path / "inputs.json").write_text(json.dumps({"host": "rig", "run_id": run_id, "profile": "quick"}))
    (path / "writer.json").write_text(json.dumps({"pid": 1, "host": "controller"}))


def health_ok(run_id):
    with open(HEALTH_OK, encoding="utf-8") as handle:
        envelope = json.load(handle)
    envelope["run_id"] = run_id
    return envelope


def test_the_store_s_own_records_are_not_read_as_probe_results(tmp_path):
    path = host_dir(tmp_path, EARLIER)
    (path / "health.json").write_text(json.dumps(health_ok(EARLIER)))
    write_store_records(path, EARLIER)
    found = find_previous_results(str(tmp_path), CURRENT, ["rig"], check_envelope=envelope_problems)
    assert found.problems == {}
    assert sorted(found.envelopes["rig"]) == ["health"]


def test_a_run_that_measured_nothing_is_passed_over_though_the_store_wrote_its_records(tmp_path):
    older = host_dir(tmp_path, OLDER)
    (older / "health.json").write_text(json.dumps(health_ok(OLDER)))
    earlier = host_dir(tmp_path, EARLIER)
    failed = dict(health_ok(EARLIER), status="error", reason="the probe raised", data={})
    (earlier / "health.json").write_text(json.dumps(failed))
    write_store_records(earlier, EARLIER)
    found = find_previous_results(str(tmp_path), CURRENT, ["rig"], check_envelope=envelope_problems)
    assert found.run_ids == {"rig": OLDER}, (found.run_ids, found.problems)


def test_an_earlier_result_is_never_read_through_a_link(tmp_path):
    outside = tmp_path / "outside.json"
    outside.write_text(json.dumps(health_ok(EARLIER)))
    results = tmp_path / "results"
    path = host_dir(results, EARLIER)
    os.symlink(str(outside), str(path / "health.json"))
    found = find_previous_results(str(results), CURRENT, ["rig"], check_envelope=envelope_problems)
    assert found.envelopes.get("rig", {}) == {}
    assert "link" in found.problems["rig"]["health"], found.problems


def test_an_earlier_host_directory_that_cannot_be_listed_is_said_not_passed_over_for_an_older_run(tmp_path, monkeypatch):
    # Issue 32: it used to be passed over silently, and drift compared with the older run.
    from ansible_collections.gpufleet.validation.plugins.plugin_utils.store import previous
    for run_id in (OLDER, EARLIER):
        (host_dir(tmp_path, run_id) / "health.json").write_text(json.dumps(health_ok(run_id)))
    listed = previous.result_probes

    def unlistable(host_path):
        if EARLIER in host_path:
            raise PermissionError(13, "Permission denied", host_path)
        return listed(host_path)
    monkeypatch.setattr(previous, "result_probes", unlistable)
    # the caller names the probe that describes the machine (run_judgement: the catalogue's machine_probe)
    found = find_previous_results(str(tmp_path), CURRENT, ["rig"], check_envelope=envelope_problems, describing="health")
    assert found.run_ids == {"rig": EARLIER} and not found.envelopes["rig"]
    assert found.problems["rig"]["health"].startswith("the earlier run %s is unreadable: EACCES (Permission denied) on " % EARLIER)
