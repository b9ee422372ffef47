"""A host's outcome (plugins/plugin_utils/act/outcome.py): what the report writes and the act completes."""
from ansible_collections.gpufleet.validation.plugins.plugin_utils.act.outcome import (
    OUTCOME_FIELDS, ROOT_ACTIONS_FIELD, action_part, host_outcome, outcome_problem, with_action)


def test_the_report_s_outcome_names_the_root_cause_and_no_action():
    document = host_outcome("R", "2026-12-04T02:00:00Z", "gpu-1", "fail", ["a: worst", "b: next"], True, "gpu-1/dossier.html")
    assert tuple(sorted(document)) == tuple(sorted(OUTCOME_FIELDS + (ROOT_ACTIONS_FIELD,)))
    assert document["root_cause"] == "a: worst" and document["reasons"] == ["a: worst", "b: next"]
    assert document["action"] == {"scheduler": "none", "node": None, "planned": "none", "done": False,
                                  "why": "no scheduler was asked to act (gpufleet_act is not set)"}
    assert host_outcome("R", "", "gpu-2", "pass", [], False, "x")["root_cause"] == ""
    assert outcome_problem(document) is None


def test_the_action_replaces_the_report_s_and_nothing_else():
    document = host_outcome("R", "", "gpu-1", "fail", ["a"], True, "d")
    acted = with_action(document, action_part("slurm", "n1", "drain", True, "gpufleet R: a"))
    assert acted["action"]["planned"] == "drain" and acted["action"]["done"] is True
    assert {key: value for key, value in acted.items() if key != "action"} == \
        {key: value for key, value in document.items() if key != "action"}
    assert document["action"]["planned"] == "none", "the report's document is not changed in place"


def test_an_outcome_edited_or_from_another_version_is_named():
    document = host_outcome("R", "", "h", "fail", ["a"], True, "d")
    assert outcome_problem([]) == "not a JSON object"
    assert outcome_problem({key: value for key, value in document.items() if key != "verdict"}) == "missing verdict"
    assert "schema_version '2'" in outcome_problem(dict(document, schema_version="2"))
    assert outcome_problem(dict(document, verdict=None)) == "host, verdict, root_cause and run_started must be text"
    assert outcome_problem(dict(document, host=["a"])) == "host, verdict, root_cause and run_started must be text"
    assert outcome_problem(dict(document, root_actions="drain")) == "root_actions must be a list of text"
    assert outcome_problem({key: value for key, value in document.items() if key != ROOT_ACTIONS_FIELD}) is None  # older


def test_the_outcome_carries_the_action_of_each_root_cause_for_the_act():
    """Issue 44: the act leaves a host whose only cause is a busy GPU in service; it reads that from root_actions, which
    the report fills from the verdict's root causes (report/verdicts.py root_actions)."""
    from ansible_collections.gpufleet.validation.plugins.plugin_utils.judge.model import Check, HostVerdict
    from ansible_collections.gpufleet.validation.plugins.plugin_utils.judge.rules import CheckTexts
    from ansible_collections.gpufleet.validation.plugins.plugin_utils.report.verdicts import root_actions

    texts = CheckTexts({"rules": [{"id": "health.gpu_processes", "probe": "health", "check": "gpu_processes", "severity": "warn",
                                   "action": "rerun_when_idle"}]})
    checks = [Check("health.gpu_processes", "h", "health", "warn", "busy: python3 (pid 2172, 62.8 GiB)"),
              Check("gemm.bf16_burst", "h", "gemm", "skip", "not validated: busy: ...", because="health.gpu_processes"),
              Check("gemm.gpu_busy", "h", "gemm", "warn", "not validated: busy: ...", because="health.gpu_processes",
                    action="rerun_when_idle"),
              Check("membw.repeat_cv", "h", "membw", "pass", "fine")]
    verdict = HostVerdict("h", "warn", ["health.gpu_processes: busy"], checks)
    assert root_actions(verdict, texts) == ["rerun_when_idle"]
    document = host_outcome("R", "", "h", "warn", verdict.reasons, True, "d", root_actions(verdict, texts))
    assert document[ROOT_ACTIONS_FIELD] == ["rerun_when_idle"] and outcome_problem(document) is None


def test_the_report_writes_each_judged_host_s_outcome_beside_its_dossier(tmp_path):
    """render_run writes <run>/outcomes/<host dir>.json for every judged host, with the verdict the judge gave (a host
    without results is unreachable, never a pass); a hostile name gets its escaped file name."""
    import json
    import os

    from ansible_collections.gpufleet.validation.plugins.plugin_utils.judge.model import FleetJudgement, HostVerdict
    from ansible_collections.gpufleet.validation.plugins.plugin_utils.report.render import render_run
    from ansible_collections.gpufleet.validation.plugins.plugin_utils.store.atomic import text_writer_below
    from ansible_collections.gpufleet.validation.plugins.plugin_utils.store.paths import OUTCOMES_DIR, host_dir_name

    run_path = tmp_path / "results" / "R1"
    run_path.mkdir(parents=True)
    hosts = ["gpu-1", "../evil\n"]
    judgement = FleetJudgement(run_id="R1", hosts={
        "gpu-1": HostVerdict("gpu-1", "fail", ["health.ecc: 3 errors", "membw: slow"], []),
        "../evil\n": HostVerdict("../evil\n", "unreachable", ["host.reachable: no result"], [])})
    render_run(str(run_path), hosts, {}, text_writer_below(str(tmp_path / "results")), judgement=judgement, workers=1)
    names = sorted(os.listdir(run_path / OUTCOMES_DIR))
    assert names == sorted(host_dir_name(host) + ".json" for host in hosts)
    first = json.loads((run_path / OUTCOMES_DIR / "gpu-1.json").read_text())
    assert first["root_cause"] == "health.ecc: 3 errors" and first["gate"] is True and first["run_id"] == "R1"
    assert first["run_started"].endswith("Z") and len(first["run_started"]) == 20
    assert first["dossier"] == "gpu-1/dossier.html" and (run_path / first["dossier"]).is_file()
    evil = json.loads((run_path / OUTCOMES_DIR / (host_dir_name("../evil\n") + ".json")).read_text())
    assert evil["host"] == "../evil\n" and evil["verdict"] == "unreachable"
