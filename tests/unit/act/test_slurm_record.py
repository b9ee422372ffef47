"""The record of acting in Slurm (plugins/plugin_utils/act/slurm_record.py): a node is this collection's to resume
only if the run its reason names recorded draining it with that very reason."""
from ansible_collections.gpufleet.validation.plugins.module_utils.slurm_node_states import NodeState
from ansible_collections.gpufleet.validation.plugins.plugin_utils.act.slurm_plan import Action, Breaker, Plan, drain_reason
from ansible_collections.gpufleet.validation.plugins.plugin_utils.act.slurm_record import (
    drained_by_run, recorded_nodes, updated_record)

RUN = "20261204T020000Z-000042"
REASON = drain_reason(RUN, "health.ecc: 3 uncorrectable errors")


def test_the_run_a_reason_names():
    assert drained_by_run(REASON) == RUN
    assert drained_by_run("gpufleet : x") is None and drained_by_run("gpufleet no colon") is None
    assert drained_by_run("admin: gpufleet x: y") is None


def test_a_node_is_recorded_only_by_the_run_its_reason_names_with_that_reason():
    records = {RUN: {"drained": [{"node": "n1", "reason": REASON}, {"node": "n2", "reason": "gpufleet other: x"}]}}
    asked = []

    def read(run_id):
        asked.append(run_id)
        return records.get(run_id)

    states = {"n1": NodeState("n1", True, REASON, ()), "n2": NodeState("n2", True, REASON, ()),
              "n3": NodeState("n3", True, drain_reason("19990101T000000Z-1", "x"), ()),
              "n4": NodeState("n4", False, REASON, ()), "n5": NodeState("n5", True, "admin: fan", ())}
    assert recorded_nodes(states, read) == {"n1"}
    assert sorted(asked) == sorted([RUN, RUN, "19990101T000000Z-1"]), "only drained nodes of ours are looked up"


def test_a_record_that_is_no_mapping_or_lists_garbage_records_nothing():
    states = {"n1": NodeState("n1", True, REASON, ())}
    for record in (None, [], {"drained": "n1"}, {"drained": [None, "n1", {"node": "n1"}]}):
        assert recorded_nodes(states, lambda run_id, record=record: record) == set()


def test_the_record_keeps_what_earlier_acts_on_the_run_did_and_adds_only_what_slurm_confirmed():
    plan = Plan((Action("a", "n1", "drain", REASON), Action("b", "n2", "drain", REASON)), Breaker(False, ("fleet: ok",)))
    applied = [{"node": "n1", "host": "a", "action": "drain", "reason": REASON, "done": True},
               {"node": "n2", "host": "b", "action": "drain", "reason": REASON, "done": False}]
    first = updated_record(None, RUN, plan, applied, "T1")
    assert first["drained"] == [{"node": "n1", "host": "a", "reason": REASON, "at": "T1"}]
    assert first["acts"][0]["tripped"] is False and first["acts"][0]["applied"] == applied
    second = updated_record(first, RUN, Plan((), Breaker(False, ())), [
        {"node": "n1", "host": "a", "action": "resume", "reason": None, "done": True}], "T2")
    assert [entry["node"] for entry in second["drained"]] == ["n1"] and len(second["acts"]) == 2
    assert second["resumed"] == [{"node": "n1", "host": "a", "reason": None, "at": "T2"}]
    assert updated_record({"schema_version": "0", "drained": [1]}, RUN, plan, [], "T3")["drained"] == []
