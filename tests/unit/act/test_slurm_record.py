"""The record of acting in Slurm (plugins/plugin_utils/act/slurm_record.py): a node is this collection's to resume
only if the run its reason names recorded draining it with that very reason; a drain is recorded before scontrol is
asked, so no node ever holds this collection's reason without a record."""
from ansible_collections.gpufleet.validation.plugins.module_utils.slurm_node_states import NodeState
from ansible_collections.gpufleet.validation.plugins.plugin_utils.act.slurm_plan import (
    Action, Breaker, Plan, drain_reason, drained_by_run)
from ansible_collections.gpufleet.validation.plugins.plugin_utils.act.slurm_record import (
    held_drains, record_problem, recorded_nodes, updated_record, with_planned_drains)

RUN = "20261204T020000Z-000042"
REASON = drain_reason(RUN, "health.ecc: 3 uncorrectable errors")


def test_the_run_a_reason_names():
    assert drained_by_run(REASON) == RUN
    assert drained_by_run("gpufleet : x") is None and drained_by_run("gpufleet no colon") is None
    assert drained_by_run("admin: gpufleet x: y") is None


def test_a_node_is_recorded_only_by_the_run_its_reason_names_with_that_reason_and_each_record_is_read_once():
    records = {RUN: {"drained": [{"node": "n1", "reason": REASON, "run_started": "S1"},
                                 {"node": "n2", "reason": "gpufleet other: x"},
                                 {"node": "n6", "reason": REASON, "confirmed": False}]}}
    asked = []

    def read(run_id):
        asked.append(run_id)
        return records.get(run_id)

    states = {"n1": NodeState("n1", True, REASON, ()), "n2": NodeState("n2", True, REASON, ()),
              "n3": NodeState("n3", True, drain_reason("19990101T000000Z-1", "x"), ()),
              "n4": NodeState("n4", False, REASON, ()), "n5": NodeState("n5", True, "admin: fan", ()),
              "n6": NodeState("n6", True, REASON, ())}
    assert recorded_nodes(states, read) == {"n1": "S1", "n6": ""}, "an unconfirmed drain is ours too"
    assert sorted(asked) == sorted([RUN, "19990101T000000Z-1"])


def test_a_record_that_is_no_mapping_or_lists_garbage_records_nothing():
    states = {"n1": NodeState("n1", True, REASON, ())}
    for record in (None, [], {"drained": "n1"}, {"drained": [None, "n1", {"node": "n1"}]}):
        assert recorded_nodes(states, lambda run_id, record=record: record) == {}


def test_a_drain_is_recorded_before_scontrol_and_confirmed_after_and_earlier_acts_are_kept():
    drains = (Action("a", "n1", "drain", REASON), Action("b", "n2", "drain", REASON))
    plan = Plan(drains, Breaker(False, ("fleet: ok",)))
    states = {"n1": NodeState("n1", False, "", ()), "n2": NodeState("n2", True, "intake", ())}
    planned = with_planned_drains(None, RUN, "S0", drains, states, "T0")
    assert [(entry["node"], entry["confirmed"], entry["intake"], entry["run_started"]) for entry in planned["drained"]] == \
        [("n1", False, False, "S0"), ("n2", False, True, "S0")]
    applied = [{"node": "n1", "host": "a", "action": "drain", "reason": REASON, "done": True},
               {"node": "n2", "host": "b", "action": "drain", "reason": REASON, "done": False}]
    first = updated_record(planned, RUN, plan, applied, "T1")
    assert [(entry["node"], entry["confirmed"]) for entry in first["drained"]] == [("n1", True), ("n2", False)]
    assert first["acts"][0] == {"at": "T1", "tripped": False, "breaker": ["fleet: ok"], "applied": applied}
    assert record_problem(first) is None
    again = with_planned_drains(first, RUN, "S0", drains[:1], states, "T2")
    assert len(again["drained"]) == 2, "a drain already listed with that reason is not listed twice"
    second = updated_record(again, RUN, Plan((), Breaker(False, ())), [
        {"node": "n1", "host": "a", "action": "resume", "expect_reason": REASON, "done": True}], "T3")
    assert second["resumed"] == [{"node": "n1", "host": "a", "reason": REASON, "at": "T3"}] and len(second["acts"]) == 2


def test_the_held_drains_are_every_run_s_out_of_service_nodes_still_holding_its_reason():
    other = "gpufleet R0: health.ecc_volatile_uncorrected: 3"
    records = {RUN: {"drained": [{"node": "n1", "reason": REASON}, {"node": "n2", "reason": REASON, "intake": True},
                                 {"node": "n3", "reason": REASON}, {"node": "n4", "reason": REASON}, "junk", {"node": None}]},
               "R0": {"drained": [{"node": "n5", "reason": other}]}}
    states = {"n1": NodeState("n1", True, REASON, ()), "n2": NodeState("n2", True, REASON, ()),
              "n3": NodeState("n3", False, "", ()), "n4": NodeState("n4", True, "admin: took it over", ()),
              "n5": NodeState("n5", True, other, ()), "n6": NodeState("n6", True, "gpufleet R9: no record of it", ())}
    assert held_drains(states, records.get) == {"n1": RUN, "n5": "R0"}
    assert held_drains(states, lambda run_id: None) == {}
    assert held_drains(states, lambda run_id: {"drained": "x"}) == {}


def test_a_tripped_act_records_what_it_would_have_drained_not_the_whole_plan():
    drains = (Action("a", "n1", "drain", REASON), Action("b", "n2", "leave", "passes and is in service"))
    record = updated_record(None, RUN, Plan(drains, Breaker(True, ("fleet: OVER",))), [], "T1")
    assert record["acts"][0]["would_have_drained"] == [{"host": "a", "node": "n1", "action": "drain", "reason": REASON}]
    assert record["drained"] == []


def test_a_record_this_collection_did_not_write_is_named():
    assert record_problem([]) == "not a JSON object"
    assert "schema_version None" in record_problem({})
    assert record_problem({"schema_version": "1", "drained": {}, "resumed": [], "acts": []}) == \
        "drained, resumed and acts must be lists"
