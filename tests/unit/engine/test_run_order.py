"""Runs are ordered by when the controller opened them, not by the clock their ids were named by (issue 45, point 2).

The red team's row: the controller's clock a day behind for one run (its run id says yesterday) with a swapped GPU:
that run had no previous run, the swap was not seen, it passed, and latest moved to it. Judged the way the report
judges (open_run, load_run, judge_run) on the rig's recorded 1-GPU H200 health result."""
import os

import pytest

from ansible_collections.gpufleet.validation.plugins.plugin_utils.run_judgement import RUN_ORDER_CHECK_ID, judge_run
from ansible_collections.gpufleet.validation.plugins.plugin_utils.store.latest_link import LatestKeptNewer, point_latest_at
from ansible_collections.gpufleet.validation.plugins.plugin_utils.store.previous import earlier_runs
from ansible_collections.gpufleet.validation.plugins.plugin_utils.store.run_dir import open_run, playbook_writer
from ansible_collections.gpufleet.validation.plugins.plugin_utils.store.run_order import (
    SEQUENCE_FIELD,
    opened_sequence,
    order_warnings,
    runs_newest_first,
)
from ansible_collections.gpufleet.validation.plugins.plugin_utils.store.stored_run import load_run

TODAY, YESTERDAY = "20261206T010000Z-000001", "20261205T011500Z-000002"
SWAPPED_UUID = "GPU-00000000-1111-2222-3333-444444444444"


def _open(results, run_id, resume=False):
    return open_run(str(results), run_id, playbook_writer(resume, "health", in_main_process=True))


def test_a_run_named_yesterday_by_a_clock_behind_still_sees_the_swap_and_becomes_latest(tmp_path, store_recorded_health):
    results = tmp_path / "results"
    _open(results, TODAY)
    store_recorded_health(results, TODAY, "node-a")
    point_latest_at(str(results), TODAY)
    _open(results, YESTERDAY)  # the controller's clock a day behind: the id says yesterday
    store_recorded_health(results, YESTERDAY, "node-a", uuid=SWAPPED_UUID)
    judgement = judge_run(load_run(str(results / YESTERDAY), ["node-a"], {}), str(results),
                          {"node-a": {"health.gpu_count": {"params": {"expected": 1}}}}, workers=1)
    assert judgement.previous_run_id == TODAY
    verdict = judgement.hosts["node-a"]
    swapped = [check for check in verdict.checks if check.id == "drift.gpus" and "swapped" in check.reason]
    assert swapped and swapped[0].status != "pass" and TODAY in swapped[0].reason, verdict.reasons
    assert verdict.verdict != "pass"
    (order,) = [check for check in judgement.unmatched_rules if check.id == RUN_ORDER_CHECK_ID]
    assert order.status == "warn"
    assert order.reason.startswith("run %s's id names 2026-12-05 01:15:00 UTC, before run %s, which was opened before "
                                   "it: is the controller's clock behind" % (YESTERDAY, TODAY)), order.reason
    point_latest_at(str(results), YESTERDAY)  # the newest run by the controller's order: latest moves forward to it
    assert os.readlink(str(results / "latest")) == YESTERDAY
    with pytest.raises(LatestKeptNewer):
        point_latest_at(str(results), TODAY)  # re-judging the older run never moves it back


def test_runs_are_numbered_as_opened_and_a_resumed_run_keeps_its_number(tmp_path):
    results = tmp_path / "results"
    for run_id in (TODAY, YESTERDAY, "my-run"):
        _open(results, run_id)
    assert [opened_sequence(str(results), run_id) for run_id in (TODAY, YESTERDAY, "my-run")] == [1, 2, 3]
    assert _open(results, TODAY, resume=True)[SEQUENCE_FIELD] == 1
    assert runs_newest_first(str(results)) == ["my-run", YESTERDAY, TODAY]
    assert earlier_runs(str(results), YESTERDAY) == [TODAY]
    assert order_warnings(str(results), TODAY) == []
    assert order_warnings(str(results), "my-run") == []  # a name with no time in it names no time


def test_runs_stored_before_runs_were_numbered_come_first_in_the_order_of_their_ids(tmp_path):
    results = tmp_path / "results"
    for run_id in ("20261207T010000Z-000009", "20261201T010000Z-000008"):
        (results / run_id / "node-a").mkdir(parents=True)
    (results / "20261207T010000Z-000009" / "run.json").write_text('{"run_id": "x", "writers": []}')
    _open(results, TODAY)
    assert runs_newest_first(str(results)) == [TODAY, "20261207T010000Z-000009", "20261201T010000Z-000008"]
    assert opened_sequence(str(results), TODAY) == 1


def test_an_unreadable_record_orders_its_run_as_unnumbered(tmp_path):
    results = tmp_path / "results"
    _open(results, TODAY)
    (results / TODAY / "run.json").write_text("{not json")
    assert opened_sequence(str(results), TODAY) == 0
    _open(results, YESTERDAY)
    assert opened_sequence(str(results), YESTERDAY) == 1
