"""A host's outcome (plugins/plugin_utils/act/outcome.py): what the report writes and the act completes."""
from ansible_collections.gpufleet.validation.plugins.plugin_utils.act.outcome import (
    OUTCOME_FIELDS, action_part, host_outcome, outcome_problem, with_action)


def test_the_report_s_outcome_names_the_root_cause_and_no_action():
    document = host_outcome("R", "gpu-1", "fail", ["a: worst", "b: next"], True, "gpu-1/dossier.html")
    assert tuple(sorted(document)) == tuple(sorted(OUTCOME_FIELDS))
    assert document["root_cause"] == "a: worst" and document["reasons"] == ["a: worst", "b: next"]
    assert document["action"] == {"scheduler": "none", "node": None, "planned": "none", "done": False,
                                  "why": "no scheduler was asked to act (gpufleet_act is not set)"}
    assert host_outcome("R", "gpu-2", "pass", [], False, "x")["root_cause"] == ""
    assert outcome_problem(document) is None


def test_the_action_replaces_the_report_s_and_nothing_else():
    document = host_outcome("R", "gpu-1", "fail", ["a"], True, "d")
    acted = with_action(document, action_part("slurm", "n1", "drain", True, "gpufleet R: a"))
    assert acted["action"]["planned"] == "drain" and acted["action"]["done"] is True
    assert {key: value for key, value in acted.items() if key != "action"} == \
        {key: value for key, value in document.items() if key != "action"}
    assert document["action"]["planned"] == "none", "the report's document is not changed in place"


def test_an_outcome_edited_or_from_another_version_is_named():
    document = host_outcome("R", "h", "fail", ["a"], True, "d")
    assert outcome_problem([]) == "not a JSON object"
    assert outcome_problem({key: value for key, value in document.items() if key != "verdict"}) == "missing verdict"
    assert "schema_version '2'" in outcome_problem(dict(document, schema_version="2"))
    assert outcome_problem(dict(document, verdict=None)) == "verdict and root_cause must be text"
