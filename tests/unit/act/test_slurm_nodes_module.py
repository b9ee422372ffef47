"""gpufleet.validation.slurm_nodes makes a change only to a node that is still as the plan saw it, and calls it done
only when Slurm shows it (plugins/modules/slurm_nodes.py); every command an argument vector."""
import pytest

from ansible_collections.gpufleet.validation.plugins.module_utils.slurm_node_states import NodeState
from ansible_collections.gpufleet.validation.plugins.modules.slurm_nodes import confirmed, refusal, scontrol_argv

OURS = "gpufleet R: gemm.correctness: 1 element differs"


def change(action, node="n1", reason=OURS, expect_reason=None):
    return {"node": node, "action": action, "reason": reason, "expect_reason": expect_reason}


def state(drained=False, reason=""):
    return NodeState("n1", drained, reason, ("gpu",))


@pytest.mark.parametrize("wanted, now, why", [
    (change("drain"), state(), None),
    (change("drain"), state(True, "admin: fan"), "taken out of service or given a reason since it was read (admin: fan)"),
    (change("drain"), NodeState("n1", False, "admin: RMA", ("gpu",), True), "taken out of service or given a reason"),
    (change("drain", expect_reason="intake"), state(True, "intake"), None),
    (change("drain", expect_reason="intake"), state(True, "admin: fan"), "drained now with another reason (admin: fan)"),
    (change("drain", expect_reason="intake"), state(), "not drained any more: left alone"),
    (change("drain", reason=""), state(), "a drain needs a reason"),
    (change("resume", reason=None, expect_reason=OURS), state(True, OURS), None),
    (change("resume", reason=None, expect_reason=OURS), state(True, "admin: fan"), "drained now with another reason"),
    (change("resume", reason=None, expect_reason=OURS), state(), "not drained any more: left alone"),
    (change("drain", node="n[1-8]"), state(), "'n[1-8]' is not one node's name"),
    (change("drain"), None, "Slurm has no node 'n1'"),
])
def test_a_change_is_refused_unless_the_node_is_still_as_planned(wanted, now, why):
    found = refusal(wanted, now)
    assert (found is None) if why is None else (found is not None and found.startswith(why)), found


def test_the_scontrol_words_are_one_argument_each_whatever_the_reason_holds():
    hostile = "x State=RESUME; rm -rf / `id` \"quoted\""
    argv = scontrol_argv("/usr/bin/scontrol", change("drain", reason=hostile))
    assert argv == ["/usr/bin/scontrol", "update", "NodeName=n1", "State=DRAIN", "Reason=" + hostile]
    assert scontrol_argv("scontrol", change("resume")) == ["scontrol", "update", "NodeName=n1", "State=RESUME"]


def test_done_only_when_slurm_shows_the_change():
    assert confirmed(change("drain"), state(True, OURS)) == (True, "drained: " + OURS)
    assert confirmed(change("drain"), state(True, "admin: fan"))[0] is False
    assert confirmed(change("drain"), state()) == (False, "not drained")
    assert confirmed(change("resume"), state()) == (True, "not drained")
    assert confirmed(change("resume"), None) == (False, "Slurm no longer lists the node")
