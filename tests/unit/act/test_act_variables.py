"""The variables that say how a run acts on its verdicts are checked before anything runs
(plugins/plugin_utils/run_variables_check.py): a typo must not surface after hours of probing, nor act unasked."""
import pytest

from ansible_collections.gpufleet.validation.plugins.plugin_utils.run_variables_check import (
    act_problems, controller_problems, gate_problems, host_problems)


@pytest.mark.parametrize("values", [
    {}, {"gpufleet_act": "none"}, {"gpufleet_act": "slurm"},
    {"gpufleet_slurm_drain_on": ["fail", "unreachable"]}, {"gpufleet_slurm_drain_on": "fail,error"},
    {"gpufleet_slurm_max_drain_percent": "25"}, {"gpufleet_slurm_max_drain_percent": 0.5},
    {"gpufleet_slurm_min_drain_nodes": "0"}, {"gpufleet_slurm_intake_reason": "new: awaiting acceptance"},
    {"gpufleet_slurm_host": "slurm-ctl", "gpufleet_slurm_conf": "/etc/slurm/slurm.conf"},
])
def test_what_an_operator_writes_is_accepted(values):
    assert act_problems(values) == []


@pytest.mark.parametrize("values, words", [
    ({"gpufleet_act": "slrum"}, "gpufleet_act must be one of none, slurm, not 'slrum'"),
    ({"gpufleet_slurm_drain_on": ["fail", "warn"]}, "gpufleet_slurm_drain_on must be a non-empty list of fail, error"),
    ({"gpufleet_slurm_drain_on": []}, "gpufleet_slurm_drain_on must be a non-empty list"),
    ({"gpufleet_slurm_max_drain_percent": "ten"}, "gpufleet_slurm_max_drain_percent must be a number from 0 to 100"),
    ({"gpufleet_slurm_max_drain_percent": 150}, "gpufleet_slurm_max_drain_percent must be a number from 0 to 100"),
    ({"gpufleet_slurm_max_drain_percent": "nan"}, "gpufleet_slurm_max_drain_percent must be a number from 0 to 100"),
    ({"gpufleet_slurm_max_drain_percent": True}, "gpufleet_slurm_max_drain_percent must be a number"),
    ({"gpufleet_slurm_min_drain_nodes": -1}, "gpufleet_slurm_min_drain_nodes must be a whole number >= 0"),
    ({"gpufleet_slurm_min_drain_nodes": "1.5"}, "gpufleet_slurm_min_drain_nodes must be a whole number >= 0"),
    ({"gpufleet_slurm_host": ["a"]}, "gpufleet_slurm_host must be a string"),
    ({"gpufleet_slurm_intake_reason": "gpufleet intake"}, "must not start with 'gpufleet '"),
])
def test_a_wrong_value_is_named_with_what_is_allowed(values, words):
    problems = act_problems(values)
    assert len(problems) == 1 and words in problems[0], problems
    assert any(words in problem for problem in controller_problems(values)[0])


@pytest.mark.parametrize("name", ["gpu[01-08]", "n1,n2", "n1 n2", "", 7, "Reason=x"])
def test_a_host_s_slurm_node_name_must_name_one_node(name):
    problems = host_problems({"gpufleet_slurm_node_name": name}, [], None)
    assert problems and "gpufleet_slurm_node_name must be one Slurm node's name" in problems[0]
    assert host_problems({"gpufleet_slurm_node_name": "gpu-017.rack4"}, [], None) == []


@pytest.mark.parametrize("gate, refused", [(True, False), (False, False), ("false", False), ("True", False), ("no", False),
                                           ("maybe", True), ("flase", True), (2, True), ([], True)])
def test_the_gate_switch_is_true_or_false_and_a_typo_never_turns_it_off(gate, refused):
    """Issue 44: every profile gates; gpufleet_gate: false reports only. Ansible's bool filter reads any other word as
    false, so a typo would report only where the gate was meant: refused before anything runs."""
    problems = gate_problems({"gpufleet_gate": gate})
    assert bool(problems) == refused, problems
    assert not refused or ("gpufleet_gate must be true" in problems[0] and problems == controller_problems({"gpufleet_gate": gate})[0])
