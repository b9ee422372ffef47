"""The Slurm plan (plugins/plugin_utils/act/slurm_plan.py, issue 36): which nodes a run drains, resumes or leaves
alone, and the circuit breaker. The node states come from a real `sinfo --json` of Debian's Slurm 22.05.8 (three
slurmd on one host: n1 drained by this collection, n2 idle, n3 drained by "admin: fan"), and from the list form of
Slurm 23.02 and later."""
import json
import os

import pytest

from ansible_collections.gpufleet.validation.plugins.module_utils.slurm_node_states import NodeState, node_states
from ansible_collections.gpufleet.validation.plugins.plugin_utils.act.slurm_plan import (
    DRAIN, LEAVE, RESUME, HostVerdict, allowance, drain_reason, plan)

DATA = os.path.join(os.path.dirname(os.path.abspath(__file__)), "data")
RUN = "20261204T120000Z-123456"


def recorded_states():
    with open(os.path.join(DATA, "sinfo-22.05.json"), encoding="utf-8") as handle:
        return node_states(json.load(handle))


def verdict(host, verdict_word, node=None, cause="gemm.correctness: 1 element differs"):
    return HostVerdict(host, node or host, verdict_word, cause)


def by_node(result):
    return {action.node: action for action in result.actions}


def test_sinfo_22_05_json_is_read_with_its_drain_flags_reasons_and_partitions():
    states = recorded_states()
    assert not any(state.job_running for state in states.values())  # three idle slurmd, no job
    assert states["n1"] == NodeState("n1", True, "gpufleet 20261204T000000Z-000001: gemm.correctness: 1 element differs",
                                     ("gpu",))
    assert states["n2"] == NodeState("n2", False, "", ("gpu",))
    assert states["n3"] == NodeState("n3", True, "admin: fan", ("cpu",))


def test_the_list_form_of_newer_slurm_and_a_node_listed_per_partition():
    states = node_states({"nodes": [{"name": "a", "state": ["IDLE", "DRAIN"], "reason": "x", "partitions": ["p1"]},
                                    {"name": "a", "state": ["IDLE", "DRAIN"], "reason": "x", "partitions": ["p2"]},
                                    {"name": "b", "state": "mixed+drain", "partitions": ["p1"]},
                                    {"name": "c", "state": ["ALLOCATED"]}, {"state": "idle"}]})
    assert states["a"] == NodeState("a", True, "x", ("p1", "p2"))
    assert states["b"].drained and not states["c"].drained and sorted(states) == ["a", "b", "c"]
    # issue 44: a node where a job runs (allocated, mixed, a job ending) gets only the probes that cannot disturb it
    assert states["c"].job_running and states["b"].job_running and not states["a"].job_running


def test_a_failing_host_is_drained_with_the_run_and_its_root_cause():
    result = plan([verdict("n2", "fail")], recorded_states(), {}, RUN)
    assert by_node(result)["n2"].action == DRAIN
    assert by_node(result)["n2"].reason == "gpufleet %s: gemm.correctness: 1 element differs" % RUN
    assert [action.node for action in result.changes()] == ["n2"]


def test_a_passing_host_drained_by_this_collection_is_resumed_only_with_its_record():
    states = recorded_states()
    recorded = {"n1": "2026-12-04T00:05:00Z"}
    assert by_node(plan([verdict("n1", "pass")], states, recorded, RUN, run_started="2026-12-04T12:00:00Z"))["n1"].action == RESUME
    unrecorded = by_node(plan([verdict("n1", "pass")], states, {}, RUN, run_started="2026-12-04T12:00:00Z"))["n1"]
    assert unrecorded.action == LEAVE and "holds no record of draining it" in unrecorded.reason


def test_a_node_drained_by_anyone_else_is_never_touched():
    states = recorded_states()
    for verdict_word in ("pass", "fail"):
        action = by_node(plan([verdict("n3", verdict_word)], states, {"n3": "2026-12-04T00:05:00Z"}, RUN))["n3"]
        assert action.action == LEAVE and "drained by someone else (admin: fan): never touched" in action.reason


def test_warn_error_and_unreachable_are_left_unless_asked_and_a_node_slurm_lacks_is_named():
    states = recorded_states()
    result = by_node(plan([verdict("n2", "warn"), verdict("x", "fail", node="gpu-17")], states, {}, RUN))
    assert result["n2"].action == LEAVE and "verdict warn: neither drained nor resumed" in result["n2"].reason
    assert result["gpu-17"].action == LEAVE and "Slurm has no node 'gpu-17'" in result["gpu-17"].reason
    asked = plan([verdict("n2", "unreachable", cause="host unreachable")], states, {}, RUN,
                 drain_on=("fail", "error", "unreachable"))
    assert by_node(asked)["n2"].action == DRAIN


def test_an_already_drained_failing_node_of_ours_is_left_as_it_is():
    action = by_node(plan([verdict("n1", "fail")], recorded_states(), {"n1": "2026-12-04T00:05:00Z"}, RUN))["n1"]
    assert action.action == LEAVE and action.reason.startswith("already drained with this collection's reason")


@pytest.mark.parametrize("size, pct, least, allowed", [(100, 10, 1, 10), (4, 10, 1, 1), (19, 10, 1, 1), (20, 10, 1, 2),
                                                       (4, 10, 0, 0), (3, 50, 1, 1)])
def test_the_allowance_is_the_share_rounded_down_and_at_least_the_minimum(size, pct, least, allowed):
    assert allowance(size, pct, least) == allowed


def test_the_breaker_drains_nothing_past_the_fleets_share_and_says_which_hosts_would_have_been():
    states = {"g%02d" % index: NodeState("g%02d" % index, False, "", ("gpu",)) for index in range(20)}
    hosts = [verdict(name, "fail" if index < 3 else "pass") for index, name in enumerate(sorted(states))]
    result = plan(hosts, states, {}, RUN)
    assert result.breaker.tripped and result.changes() == []
    assert [action.node for action in result.planned(DRAIN)] == ["g00", "g01", "g02"]
    assert result.breaker.words[0] == "fleet: 3 of 20 host(s) to drain, 2 allowed (10 %, at least 1): OVER"
    one_less = [verdict("g00", "pass")] + hosts[1:]
    assert [action.node for action in plan(one_less, states, {}, RUN).changes()] == ["g01", "g02"]


def test_the_breaker_holds_each_partition_to_its_share_too():
    states = {name: NodeState(name, False, "", ("small",) if name in ("s1", "s2") else ("big",))
              for name in ["s1", "s2"] + ["b%02d" % index for index in range(38)]}
    hosts = [verdict(name, "fail" if name in ("s1", "s2") else "pass") for name in sorted(states)]
    result = plan(hosts, states, {}, RUN)
    assert "fleet: 2 of 40 host(s) to drain, 4 allowed (10 %, at least 1)" == result.breaker.words[0]
    assert "partition small: 2 of 2 node(s) to drain, 1 allowed: OVER" in result.breaker.words
    assert result.breaker.tripped and result.changes() == []


def test_two_hosts_naming_one_node_leave_it_alone():
    result = plan([verdict("a", "fail", node="n2"), verdict("b", "pass", node="n2")], recorded_states(), {}, RUN)
    assert [action.action for action in result.actions] == [LEAVE, LEAVE]
    assert "2 inventory hosts name the Slurm node 'n2'" in result.actions[0].reason


def test_the_reason_is_one_printable_line_of_bounded_length():
    reason = drain_reason(RUN, "line one\nline\ttwo \x1b[31m" + "x" * 500)
    assert "\n" not in reason and "\x1b" not in reason and len(reason) == 200 and reason.endswith("...")
    assert drain_reason(RUN, "") == "gpufleet %s: no reason given" % RUN


def test_a_name_that_is_no_single_node_is_left_alone_whatever_slurm_holds():
    states = dict(recorded_states(), **{"n[1-3]": NodeState("n[1-3]", False, "", ("gpu",))})
    for node in ("n[1-3]", "n1,n2", "n1 n2", "", "-n1"):
        action = by_node(plan([HostVerdict("evil", node, "fail", "x")], states, {}, RUN))[node]
        assert action.action == LEAVE and "is not one Slurm node's name" in action.reason


def test_nodes_handed_over_with_the_intake_reason_are_resumed_on_pass_and_given_the_cause_on_fail_even_down():
    states = {"new1": NodeState("new1", True, "new: awaiting acceptance", ("gpu",)),
              "new2": NodeState("new2", True, "new: awaiting acceptance", ("gpu",)),
              "old": NodeState("old", True, "new: awaiting acceptance ", ("gpu",)),
              "new3": NodeState("new3", True, "new: awaiting acceptance", ("gpu",), True)}
    hosts = [verdict("new1", "pass"), verdict("new2", "fail"), verdict("old", "pass"), verdict("new3", "pass")]
    result = by_node(plan(hosts, states, {}, RUN, intake_reason="new: awaiting acceptance"))
    assert result["new1"].action == RESUME and "handed over for acceptance" in result["new1"].reason
    assert result["new2"].action == DRAIN and result["new2"].reason.startswith("gpufleet %s: " % RUN)
    assert result["old"].action == LEAVE, "only the exact reason hands a node over"
    assert result["new3"].action == RESUME, "handed over drained and down (not yet registered): the operator's choice"
    without = by_node(plan(hosts, states, {}, RUN))
    assert [without[name].action for name in ("new1", "new2")] == [LEAVE, LEAVE]


def test_a_node_already_out_of_service_does_not_count_against_the_breaker():
    states = {"new%d" % index: NodeState("new%d" % index, True, "intake", ("gpu",)) for index in range(8)}
    states["busy"] = NodeState("busy", False, "", ("gpu",))
    hosts = [verdict(name, "fail") for name in sorted(states)]
    result = plan(hosts, states, {}, RUN, intake_reason="intake")
    assert not result.breaker.tripped, result.breaker.words
    assert len(result.changes()) == 9 and result.breaker.words[0].startswith("fleet: 1 of 9 host(s) to drain")


def test_scontrol_show_nodes_json_of_newer_slurm_is_read_as_its_documentation_shows_it():
    """The node of Slurm 24.11's documentation (scontrol show nodes --json, one entry trimmed to what is read): state
    a list of words, partitions a list, reason and reason_set_by_user text. Not from a live controller (only 22.05.8
    ran here)."""
    document = {"nodes": [{"name": "host1", "address": "localhost", "state": ["IDLE", "DRAIN"], "partitions": ["debug"],
                           "reason": "gpufleet R: x", "reason_set_by_user": "root",
                           "reason_changed_at": {"set": True, "infinite": False, "number": 0}}],
                "last_update": {"set": True, "infinite": False, "number": 1722010273}, "errors": [], "warnings": []}
    assert node_states(document) == {"host1": NodeState("host1", True, "gpufleet R: x", ("debug",))}


def test_a_node_an_operator_or_slurm_took_out_without_drain_is_never_touched():
    """A node set DOWN "admin: RMA" (22.05.8 shows it DOWN+NOT_RESPONDING, no DRAIN flag) was drained over and its
    reason replaced, so a later pass resumed a node an operator had taken out."""
    states = {"n1": NodeState("n1", False, "admin: RMA", ("gpu",), True),
              "n2": NodeState("n2", False, "Not responding", ("gpu",), True),
              "n3": NodeState("n3", False, "", ("gpu",), True),
              "n4": NodeState("n4", False, "a note", ("gpu",), False)}
    for verdict_word in ("fail", "pass"):
        result = by_node(plan([verdict(name, verdict_word) for name in states], states, {}, RUN,
                              max_pct=100))
        assert result["n1"].reason == "out of service by someone else (admin: RMA): never touched"
        assert result["n2"].action == LEAVE and result["n4"].reason == "given a reason by someone else (a note): never touched"
        assert result["n3"].action == LEAVE, result["n3"]
    assert not plan([verdict("n1", "fail")], states, {}, RUN).changes()


def test_every_node_keyword_is_no_node_name():
    """scontrol update NodeName=ALL (any case) drains every node (22.05.8)."""
    states = {"ALL": NodeState("ALL", False, "", ("gpu",)), "all": NodeState("all", False, "", ("gpu",))}
    for node in ("ALL", "all", "All"):
        action = by_node(plan([HostVerdict("h", node, "fail", "x")], states, {}, RUN))[node]
        assert action.action == LEAVE and "not ALL" in action.reason


def test_a_pass_from_a_run_older_than_the_drain_does_not_resume_it():
    """Re-acting on an old run where the host passed resumed the node a newer run had drained. The runs' starts are
    compared: a pass in a run as new as the drainer or newer resumes; an unknown start resumes nothing."""
    newer = drain_reason("R2", "gemm.correctness: 1 element differs")
    states = {"n1": NodeState("n1", True, newer, ("gpu",))}
    recorded = {"n1": "2026-12-04T02:00:00Z"}  # when R2 started
    older = by_node(plan([verdict("n1", "pass")], states, recorded, "R0", run_started="2026-12-04T01:00:00Z"))["n1"]
    assert older.action == LEAVE and "but run R2, which started 2026-12-04T02:00:00Z, drained it: not resumed" in older.reason
    for started, records in (("", recorded), ("2026-12-04T04:00:00Z", {"n1": ""})):
        unknown = by_node(plan([verdict("n1", "pass")], states, records, "R0", run_started=started))["n1"]
        assert unknown.action == LEAVE and "at an unknown time" in unknown.reason
    for started in ("2026-12-04T02:00:00Z", "2026-12-04T03:00:00Z"):
        later = by_node(plan([verdict("n1", "pass")], states, recorded, "R3", run_started=started))["n1"]
        assert later.action == RESUME, started
    same = by_node(plan([verdict("n1", "pass")], states, {"n1": ""}, "R2"))["n1"]
    assert same.action == RESUME, "the run that drained it, re-judged (the undo of docs/acting.md)"


def test_acting_on_one_run_rack_by_rack_drains_no_more_than_at_once():
    """The breaker held one act, not the run: six racks of 5 nodes, one failure each, acted on rack by rack, drained
    all six of a 30-node partition whose share is 3. Each act sees only its rack's hosts; the run's fleet and its
    earlier drains come from the whole run."""
    reason = drain_reason(RUN, "gemm.correctness: 1 element differs")
    states = {"g%02d" % index: NodeState("g%02d" % index, False, "", ("gpu",)) for index in range(30)}
    drained, tripped_at = [], None
    for rack in range(6):
        hosts = [verdict("g%02d" % index, "fail" if index == rack * 5 else "pass") for index in range(rack * 5, rack * 5 + 5)]
        result = plan(hosts, states, {}, RUN, fleet=sorted(states), held={node: RUN for node in drained})
        if result.breaker.tripped:
            tripped_at = rack
            break
        for action in result.changes():
            states[action.node] = NodeState(action.node, True, reason, ("gpu",))
            drained.append(action.node)
    assert tripped_at == 3 and drained == ["g00", "g05", "g10"]
    assert result.breaker.words[0] == "fleet: 4 of 30 host(s) to drain, 3 allowed (10 %, at least 1): OVER"
    alone = plan([verdict("g15", "fail")] + [verdict("g%02d" % index, "pass") for index in range(16, 20)], states, {}, RUN)
    assert not alone.breaker.tripped, "each rack alone (5 hosts, 1 allowed) would have drained its one"


def test_an_act_that_drains_nothing_never_trips_so_a_re_judged_run_s_resumes_go_through():
    """Re-judging a run whose drains were wrong and acting again tripped the breaker on its own earlier drains."""
    ours_reason = drain_reason(RUN, "x")
    states = {"n%d" % index: NodeState("n%d" % index, index < 2, ours_reason if index < 2 else "", ("gpu",))
              for index in range(3)}
    result = plan([verdict("n%d" % index, "pass") for index in range(3)], states,
                  {"n0": "", "n1": ""}, RUN, held={"n0": RUN, "n1": RUN})
    assert not result.breaker.tripped and [action.action for action in result.changes()] == [RESUME, RESUME]


def test_a_night_sliced_into_runs_drains_no_more_than_the_partition_s_share():
    """Issue 45: five act.yml runs in one night, each over a 2-host slice with one failing host, over a 10-node
    partition: each run said "1 of 10 node(s) to drain, 1 allowed" and 5 of 10 nodes were drained. The nodes this
    collection already holds drained from earlier runs count against the share."""
    states = {"g%d" % index: NodeState("g%d" % index, False, "", ("gpu",)) for index in range(10)}
    drained = {}
    for night_run in range(5):
        run_id = "R%d" % night_run
        hosts = [verdict("g%d" % (2 * night_run), "fail"), verdict("g%d" % (2 * night_run + 1), "pass")]
        result = plan(hosts, states, {}, run_id, held=dict(drained))
        if result.breaker.tripped:
            break
        for action in result.changes():
            states[action.node] = NodeState(action.node, True, drain_reason(run_id, "x"), ("gpu",))
            drained[action.node] = run_id
    assert night_run == 1 and drained == {"g0": "R0"}
    assert result.breaker.words[1] == ("partition gpu: 2 of 10 node(s) to drain, 1 allowed (already 1 of 10 drained by "
                                       "earlier runs: g0): OVER")
    # with the earlier run's node resumed by this act (it passes now), the share holds again
    hosts = [verdict("g0", "pass"), verdict("g2", "fail")]
    again = plan(hosts, states, {"g0": "2026-12-06T01:00:00Z"}, "R1", held=dict(drained), run_started="2026-12-06T03:00:00Z")
    assert not again.breaker.tripped and [action.action for action in again.changes()] == [RESUME, DRAIN]


def test_the_fleet_share_counts_only_hosts_whose_node_slurm_has():
    states = {"n%d" % index: NodeState("n%d" % index, False, "", ("gpu",)) for index in range(10)}
    hosts = [verdict("n%d" % index, "fail" if index == 0 else "pass") for index in range(10)]
    hosts += [verdict("x%d" % index, "pass") for index in range(90)]
    assert plan(hosts, states, {}, RUN).breaker.words[0] == "fleet: 1 of 10 host(s) to drain, 1 allowed (10 %, at least 1)"


def test_a_quote_that_scontrol_would_strip_never_reaches_the_reason():
    """scontrol strips a leading or trailing '"' from Reason= (22.05.8): the node held a reason the record did not."""
    reason = drain_reason(RUN, 'toolchain: torch says "12.8"')
    assert reason.endswith("torch says '12.8'") and '"' not in reason


BUSY_CAUSE = "health.gpu_processes: GPU 0 (GPU-8eb0778b): busy: 1 compute process(es) of another job on the GPU: python3 (pid 2172, 62.8 GiB)"


@pytest.mark.parametrize("verdict_word", ["fail", "error", "warn", "not_validated"])
def test_a_host_whose_only_root_cause_is_a_busy_gpu_is_never_drained(verdict_word):
    """Issue 44: another job on the GPU is no fault of the node, whatever gpufleet_slurm_drain_on says."""
    busy = HostVerdict("n2", "n2", verdict_word, BUSY_CAUSE, ("rerun_when_idle", "rerun_when_idle"))
    result = plan([busy], recorded_states(), {}, RUN, drain_on=("fail", "error", "warn", "not_validated"))
    action = by_node(result)["n2"]
    assert action.action == LEAVE and "never drained for it" in action.reason and "pid 2172" in action.reason
    assert result.changes() == []


def test_a_busy_gpu_does_not_shield_another_root_cause():
    both = HostVerdict("n2", "n2", "fail", "gemm.correctness: 1 element differs", ("drain", "rerun_when_idle"))
    assert by_node(plan([both], recorded_states(), {}, RUN))["n2"].action == DRAIN
    unknown = HostVerdict("n2", "n2", "fail", BUSY_CAUSE)  # an outcome written before root_actions: as before
    assert by_node(plan([unknown], recorded_states(), {}, RUN))["n2"].action == DRAIN
