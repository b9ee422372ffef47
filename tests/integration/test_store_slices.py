"""Slices by design (docs/scale.md): three playbook runs of one run id at the same time, each with --limit, then one
playbooks/report.yml that judges them all as a single run of the whole fleet would have, each host with its own rule
overrides (read from its stored inputs.json, not from the report's command line)."""
import os
import subprocess
import sys

FAULTS_DIR = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "fleet")
if FAULTS_DIR not in sys.path:
    sys.path.insert(0, FAULTS_DIR)

from faults import runs  # noqa: E402  pylint: disable=wrong-import-position

SLICE = ("-e", "gpufleet_resume=true", "-e", "gpufleet_report=false")
# On this GPU-less machine a host that should have one GPU fails health.gpu_count: the override must reach the judge.
EXPECTS_A_GPU = {"gpufleet_rule_overrides": {"health.gpu_count": {"params": {"expected": 1}}}}


def judged(run_dir, host):
    entry = runs.fleet_host(run_dir, host)
    # what compares with other runs and hosts differs by design: "whole" is judged with "sliced" before it (drift, the
    # trend checks' history)
    checks = sorted((check["id"], check.get("gpu_index"), check["status"]) for check in entry["checks"]
                    if not check["id"].startswith(("drift.", "fleet.", "history.")))
    return entry["verdict"], checks


def test_three_slices_at_once_then_one_report_judge_each_host_as_one_run_would(netns_fleet, tmp_path):
    fleet = netns_fleet(hosts=3, rack_size=1, prefix="slice")
    strict = fleet.names[0]
    host_vars = {strict: EXPECTS_A_GPU}
    results = tmp_path / "results"
    slices = [runs.BackgroundRun(runs.validate_argv(fleet, results, *runs.QUICK, *SLICE, "--limit", name,
                                                    host_vars=host_vars, run_id="sliced"), tmp_path / ("%s.log" % name))
              for name in fleet.names]
    try:
        outcomes = [one.wait() for one in slices]
    finally:
        for one in slices:
            one.kill()
    for code, output in outcomes:
        assert code == 0, output
        assert "TASK [gpufleet.validation.report" not in output
    run_dir = str(results / "sliced")
    assert not os.path.exists(os.path.join(run_dir, "fleet.json"))
    record = runs.load_json(os.path.join(run_dir, "run.json"))
    assert sorted(writer["limit"] for writer in record["writers"]) == sorted(fleet.names)
    assert len({writer["writer_id"] for writer in record["writers"]}) == 3

    # report only, as the slices ran (runs.QUICK): the gate refuses every host of a CPU machine (issue 44)
    completed = subprocess.run([runs.ANSIBLE_PLAYBOOK, "playbooks/report.yml", "-e", "gpufleet_results_dir=%s" % results,
                                "-e", "gpufleet_run_id=sliced", "-e", "gpufleet_gate=false"], cwd=runs.ROOT, capture_output=True, text=True,
                               timeout=runs.PLAYBOOK_TIMEOUT_S, check=False)
    assert completed.returncode == 0, completed.stdout + completed.stderr
    runs.assert_reported_as(run_dir, strict, "fail", "health.gpu_count")
    for name in fleet.names[1:]:
        runs.assert_validated(run_dir, name)
        assert runs.fleet_host(run_dir, name)["groups"], name  # its inventory groups, from inputs.json

    code, output = runs.run_validate(fleet, results, *runs.QUICK, host_vars=host_vars, run_id="whole")
    assert code == 0, output
    for name in fleet.names:
        assert judged(run_dir, name) == judged(str(results / "whole"), name), name
