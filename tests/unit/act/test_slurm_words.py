"""What acting in Slurm hands the module and says (plugins/plugin_utils/act/slurm_words.py)."""
from ansible_collections.gpufleet.validation.plugins.module_utils.slurm_node_states import NodeState
from ansible_collections.gpufleet.validation.plugins.plugin_utils.act.slurm_plan import HostVerdict, plan
from ansible_collections.gpufleet.validation.plugins.plugin_utils.act.slurm_words import (
    applied_lines, changes, failure, host_actions, plan_lines, with_hosts)

RUN = "R"
OURS = "gpufleet R0: old cause"
STATES = {"n1": NodeState("n1", False, "", ("gpu",)), "n2": NodeState("n2", True, OURS, ("gpu",)),
          "n3": NodeState("n3", True, "admin: fan", ("gpu",))}
STATES.update({"m%d" % index: NodeState("m%d" % index, False, "", ("gpu",)) for index in range(17)})


def one_drain_one_resume():
    return plan([HostVerdict("a", "n1", "fail", "cause a"), HostVerdict("b", "n2", "pass", ""),
                 HostVerdict("c", "n3", "pass", "")], STATES, {"n2": "2026-12-04T00:00:00Z"}, RUN,
                run_started="2026-12-04T01:00:00Z")


def test_each_change_carries_the_reason_the_node_holds_now():
    assert changes(one_drain_one_resume(), STATES) == [
        {"node": "n1", "action": "drain", "reason": "gpufleet R: cause a", "expect_reason": None},
        {"node": "n2", "action": "resume", "reason": None, "expect_reason": OURS}]


def test_each_host_gets_its_action_done_only_where_slurm_showed_it():
    result = one_drain_one_resume()
    applied = with_hosts(result, [{"node": "n1", "action": "drain", "done": True, "why": "Slurm shows it drained: x"},
                                  {"node": "n2", "action": "resume", "done": False, "why": "not drained any more: left alone"}])
    assert [entry["host"] for entry in applied] == ["a", "b"]
    actions = host_actions(result, applied)
    assert actions["a"] == {"scheduler": "slurm", "node": "n1", "planned": "drain", "done": True,
                            "why": "gpufleet R: cause a (Slurm shows it drained: x)"}
    assert actions["b"]["done"] is False and actions["c"]["planned"] == "leave"
    assert failure(result, applied, "") == "not every change was made: resume n2: not drained any more: left alone"
    assert failure(result, applied[:1], "") is None
    assert failure(result, [], "the changes could not be made: boom") == "not every change was made: the changes could not be made: boom"
    assert applied_lines(applied[:1]) == ["drain n1: Slurm shows it drained: x"]


def test_a_tripped_breaker_says_each_node_it_would_have_drained_and_no_action_is_done():
    verdicts = [HostVerdict("h%d" % index, "m%d" % index, "fail" if index < 3 else "pass", "cause %d" % index)
                for index in range(17)]
    result = plan(verdicts, STATES, {}, RUN)
    assert result.breaker.tripped and changes(result, STATES) == []
    why = failure(result, [], "")
    assert why.startswith("circuit breaker tripped: nothing was drained or resumed. fleet: 3 of 17 host(s) to drain, 1 allowed")
    assert "m0 (host h0): gpufleet R: cause 0; m1 (host h1): gpufleet R: cause 1; m2 (host h2): gpufleet R: cause 2" in why
    actions = host_actions(result, [])
    assert actions["h0"]["why"].startswith("not drained: the circuit breaker tripped (fleet: 3 of 17")
    assert not any(action["done"] for action in actions.values())
    assert plan_lines(result)[0] == "drain m0 (host h0): gpufleet R: cause 0"
    assert plan_lines(result)[-1].startswith("circuit breaker: partition gpu: 3 of 20 node(s) to drain, 2 allowed")
