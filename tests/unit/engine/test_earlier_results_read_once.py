"""The report reads each earlier result once and lists the runs once (issue 47, point 7): drift's search for each
host's previous results (store/previous.py) notes what the GPUs moved check needs of them (store/earlier_gpus.py), and
the runs listed for it serve that check and the run order's warning too. Before, last_reporters parsed the previous
night's results again and the runs were listed three times. Judged the way the report judges (load_run + judge_run) on
the rig's recorded 1-GPU H200 health result; the real readers run, counted on their way through."""
import os

from ansible_collections.gpufleet.validation.plugins.plugin_utils.run_judgement import judge_run
from ansible_collections.gpufleet.validation.plugins.plugin_utils.store import read, run_order
from ansible_collections.gpufleet.validation.plugins.plugin_utils.store.stored_run import load_run

EARLIER, NOW = "20261205T010000Z-000001", "20261206T010000Z-000002"
OVERRIDES = {"health.gpu_count": {"params": {"expected": 1}}}


def _uuid(number):
    return "GPU-00000000-1111-2222-3333-%012d" % number


def test_each_earlier_result_is_parsed_once_and_the_runs_are_listed_once(tmp_path, store_recorded_health, monkeypatch):
    results = tmp_path / "results"
    for number, host in enumerate(("node-a", "node-b", "node-c")):
        store_recorded_health(results, EARLIER, host, uuid=_uuid(number))  # node-c is not in this run
    store_recorded_health(results, NOW, "node-a", uuid=_uuid(0))
    store_recorded_health(results, NOW, "node-b", uuid=_uuid(2))  # node-c's GPU, last reported by node-c
    parsed, listed = [], []
    parse, list_runs = read.read_json_with_identity, run_order.stored_run_ids

    def parse_counted(host_path, name, *args):
        parsed.append(os.path.relpath(os.path.join(host_path, name), str(results)))
        return parse(host_path, name, *args)

    def list_counted(results_dir):
        listed.append(results_dir)
        return list_runs(results_dir)
    monkeypatch.setattr(read, "read_json_with_identity", parse_counted)
    monkeypatch.setattr(run_order, "stored_run_ids", list_counted)
    run = load_run(str(results / NOW), ["node-a", "node-b"], {})
    judgement = judge_run(run, str(results), {"node-a": OVERRIDES, "node-b": OVERRIDES}, workers=1)
    assert sorted(path for path in parsed if path.startswith(EARLIER) and path.endswith("health.json")) == [
        os.path.join(EARLIER, host, "health.json") for host in ("node-a", "node-b", "node-c")]
    assert len(listed) == 1
    # what was read once still serves both: drift compares with the earlier run, and node-c's GPU is seen moved
    assert judgement.previous_run_id == EARLIER
    assert any(check.id.startswith("drift.") for check in judgement.hosts["node-a"].checks)
    assert [check.id for check in judgement.hosts["node-a"].checks if "moved" in check.id] == []
    assert any(reason.startswith("fleet.gpus_moved: not validated: its GPUs were last reported by another host, node-c, in "
                                 "run %s" % EARLIER) for reason in judgement.hosts["node-b"].reasons), judgement.hosts["node-b"].reasons
