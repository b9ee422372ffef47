"""Acting on verdicts in a real Slurm (issue 36, docs/acting.md): Debian's slurmctld, slurmd and munged started by the
test (tests/fleet/slurm_cluster.py), the real playbooks, and the node states read back with sinfo --json. No mock.

The stored runs are made with the report's own outcome function (plugins/plugin_utils/act/outcome.py), so that each
test chooses its verdicts; one test goes through validate.yml itself, whose report writes them."""
import json
import os
import shutil
import subprocess
import sys
import time

import yaml

from ansible_collections.gpufleet.validation.plugins.plugin_utils.act.outcome import host_outcome
from ansible_collections.gpufleet.validation.plugins.plugin_utils.store.atomic import write_json_atomically
from ansible_collections.gpufleet.validation.plugins.plugin_utils.store.paths import SLURM_ACTIONS_FILE, outcome_path

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
ANSIBLE_PLAYBOOK = os.path.join(os.path.dirname(sys.executable), "ansible-playbook")
NODES = {"n1": ["gpu"], "n2": ["gpu"], "n3": ["cpu"]}
HOSTS = {"gpu-a": "n1", "gpu-b": "n2", "cpu-c": "n3"}
CAUSE = "health.ecc_volatile_uncorrected: 3 uncorrectable ECC errors on GPU 5"


def inventory(tmp_path, hosts):
    path = tmp_path / "inventory.yml"
    path.write_text(yaml.safe_dump({"all": {"hosts": {host: {"gpufleet_slurm_node_name": node}
                                                      for host, node in hosts.items()}}}))
    return str(path)


def stored_run(results, run_id, verdicts, started=None):
    """A run whose report gave these verdicts, {host: verdict}, started now unless told."""
    started = started or time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    for host, verdict in verdicts.items():
        reasons = [] if verdict == "pass" else [CAUSE if verdict == "fail" else "host.reachable: no answer"]
        write_json_atomically(outcome_path(str(results), run_id, host),
                              host_outcome(run_id, started, host, verdict, reasons, verdict != "pass",
                                           host + "/dossier.html"),
                              root=str(results))


def act(cluster, tmp_path, run_id, *extra, hosts=None):
    argv = [ANSIBLE_PLAYBOOK, "playbooks/act.yml", "-i", inventory(tmp_path, hosts or HOSTS), "-e", "gpufleet_run_id=" + run_id,
            "-e", "gpufleet_results_dir=%s" % (tmp_path / "results"), "-e", "gpufleet_act=slurm",
            "-e", "gpufleet_slurm_conf=" + cluster.conf] + list(extra)
    completed = subprocess.run(argv, cwd=ROOT, capture_output=True, text=True, timeout=300, check=False)
    return completed.returncode, completed.stdout + completed.stderr


def outcome(tmp_path, run_id, host):
    with open(outcome_path(str(tmp_path / "results"), run_id, host), encoding="utf-8") as handle:
        return json.load(handle)


def record(tmp_path, run_id):
    with open(os.path.join(str(tmp_path / "results"), run_id, SLURM_ACTIONS_FILE), encoding="utf-8") as handle:
        return json.load(handle)


def test_a_fail_is_drained_a_foreign_drain_is_never_touched_and_a_pass_resumes_only_our_own(slurm_cluster, tmp_path):
    cluster = slurm_cluster(NODES)
    cluster.scontrol("update", "NodeName=n3", "State=DRAIN", "Reason=admin: fan")
    stored_run(tmp_path / "results", "R1", {"gpu-a": "fail", "gpu-b": "pass", "cpu-c": "fail"})
    code, output = act(cluster, tmp_path, "R1")
    assert code == 0, output
    assert cluster.node("n1") == {"drained": True, "reason": "gpufleet R1: " + CAUSE, "words": ["DRAIN", "IDLE"]}
    assert cluster.node("n2")["drained"] is False
    assert cluster.node("n3")["reason"] == "admin: fan"
    assert "drained by someone else (admin: fan): never touched" in output
    assert [(entry["node"], entry["confirmed"]) for entry in record(tmp_path, "R1")["drained"]] == [("n1", True)]
    assert outcome(tmp_path, "R1", "gpu-a")["action"] == {
        "scheduler": "slurm", "node": "n1", "planned": "drain", "done": True,
        "why": "gpufleet R1: %s (Slurm shows it drained: gpufleet R1: %s)" % (CAUSE, CAUSE)}
    assert outcome(tmp_path, "R1", "cpu-c")["action"]["planned"] == "leave"

    # n2 drained by hand with a reason that looks like ours, but no run recorded draining it: not ours to resume.
    cluster.scontrol("update", "NodeName=n2", "State=DRAIN", "Reason=gpufleet R1: copied by hand")
    stored_run(tmp_path / "results", "R2", {"gpu-a": "pass", "gpu-b": "pass", "cpu-c": "pass"})
    code, output = act(cluster, tmp_path, "R2")
    assert code == 0, output
    assert cluster.node("n1")["drained"] is False
    assert cluster.node("n2")["reason"] == "gpufleet R1: copied by hand"
    assert cluster.node("n3")["reason"] == "admin: fan"
    assert "holds no record of draining it: not resumed" in output
    assert [entry["node"] for entry in record(tmp_path, "R2")["resumed"]] == ["n1"]


def test_past_the_circuit_breaker_nothing_changes_and_the_step_fails_naming_each_node(slurm_cluster, tmp_path):
    cluster = slurm_cluster(NODES)
    stored_run(tmp_path / "results", "R1", {"gpu-a": "fail", "gpu-b": "fail", "cpu-c": "pass"})
    code, output = act(cluster, tmp_path, "R1")
    assert code != 0, output
    assert "circuit breaker tripped: nothing was drained or resumed" in output
    assert "fleet: 2 of 3 host(s) to drain, 1 allowed (10 %, at least 1): OVER" in output
    assert "partition gpu: 2 of 2 node(s) to drain, 1 allowed: OVER" in output
    assert "n1 (host gpu-a): gpufleet R1: " + CAUSE in output and "n2 (host gpu-b): gpufleet R1: " + CAUSE in output
    assert [cluster.node(node)["drained"] for node in NODES] == [False, False, False]
    assert record(tmp_path, "R1")["drained"] == [] and record(tmp_path, "R1")["acts"][0]["tripped"] is True
    assert [entry["node"] for entry in record(tmp_path, "R1")["acts"][0]["would_have_drained"]] == ["n1", "n2"]
    assert outcome(tmp_path, "R1", "gpu-a")["action"]["done"] is False
    assert outcome(tmp_path, "R1", "gpu-a")["action"]["why"].startswith("not drained: the circuit breaker tripped")
    # The same verdicts with a wider share, for this one run: drained.
    code, output = act(cluster, tmp_path, "R1", "-e", "gpufleet_slurm_max_drain_percent=100")
    assert code == 0, output
    assert [cluster.node(node)["drained"] for node in NODES] == [True, True, False]


def test_check_mode_prints_the_plan_and_changes_and_writes_nothing(slurm_cluster, tmp_path):
    cluster = slurm_cluster(NODES)
    stored_run(tmp_path / "results", "R1", {"gpu-a": "fail", "gpu-b": "pass", "cpu-c": "pass"})
    before = outcome(tmp_path, "R1", "gpu-a")
    code, output = act(cluster, tmp_path, "R1", "--check")
    assert code == 0, output
    assert "check mode: nothing changed; the plan:" in output and "drain n1 (host gpu-a): gpufleet R1: " + CAUSE in output
    assert cluster.node("n1")["drained"] is False
    assert sorted(os.listdir(os.path.join(str(tmp_path / "results"), "R1"))) == ["outcomes"], "no record, no lock file"
    assert outcome(tmp_path, "R1", "gpu-a") == before


def test_unreachable_and_error_drain_only_when_asked_and_a_hostile_node_name_touches_nothing(slurm_cluster, tmp_path):
    cluster = slurm_cluster(NODES)
    stored_run(tmp_path / "results", "R1", {"gpu-a": "unreachable", "gpu-b": "pass", "cpu-c": "pass", "evil": "fail"})
    hosts = dict(HOSTS, evil="n[1-3]")
    code, output = act(cluster, tmp_path, "R1", "-e", "gpufleet_slurm_max_drain_percent=100", hosts=hosts)
    assert code == 0, output
    assert "verdict unreachable: neither drained nor resumed (drained on: fail)" in output
    assert "'n[1-3]' is not one Slurm node's name" in output
    assert [cluster.node(node)["drained"] for node in NODES] == [False, False, False]
    code, output = act(cluster, tmp_path, "R1", "-e", '{"gpufleet_slurm_drain_on": ["fail", "unreachable"]}',
                       hosts=hosts)
    assert code == 0, output
    assert cluster.node("n1") == {"drained": True, "reason": "gpufleet R1: host.reachable: no answer",
                                  "words": ["DRAIN", "IDLE"]}
    assert [cluster.node(node)["drained"] for node in ("n2", "n3")] == [False, False]


def test_new_nodes_handed_over_drained_are_resumed_only_when_acceptance_passes(slurm_cluster, tmp_path):
    cluster = slurm_cluster(NODES)
    for node in ("n1", "n2"):
        cluster.scontrol("update", "NodeName=" + node, "State=DRAIN", "Reason=new: awaiting acceptance")
    intake = ("-e", json.dumps({"gpufleet_slurm_intake_reason": "new: awaiting acceptance"}))
    stored_run(tmp_path / "results", "R1", {"gpu-a": "pass", "gpu-b": "fail", "cpu-c": "pass"})
    code, output = act(cluster, tmp_path, "R1", *intake)
    assert code == 0, output
    assert cluster.node("n1")["drained"] is False
    assert cluster.node("n2")["reason"] == "gpufleet R1: " + CAUSE
    stored_run(tmp_path / "results", "R2", {"gpu-a": "pass", "gpu-b": "pass", "cpu-c": "pass"})
    code, output = act(cluster, tmp_path, "R2", *intake)
    assert code == 0, output
    assert cluster.node("n2")["drained"] is False


def test_validate_drains_a_failing_host_and_gives_the_user_s_own_play_its_outcome(slurm_cluster, tmp_path):
    """The whole run: the local machine's report fails it (an override says it has 4 GPUs; this machine has none),
    the act drains its node, and a play of the user's after validate.yml reads gpufleet_outcome. Report only
    (gpufleet_gate: false): with the gate on, validate.yml fails the host it refuses, which then reaches no later play."""
    cluster = slurm_cluster(NODES)
    playbook = tmp_path / "site.yml"
    playbook.write_text(yaml.safe_dump([
        {"name": "validate", "ansible.builtin.import_playbook": "gpufleet.validation.validate"},
        {"name": "the user's own step", "hosts": "all", "gather_facts": False, "tasks": [
            {"name": "keep the outcome", "ansible.builtin.copy": {
                "content": "{{ gpufleet_outcome | to_json }}", "dest": str(tmp_path / "outcome-{{ inventory_hostname }}.json")},
             "delegate_to": "localhost"}]}], sort_keys=False))
    path = tmp_path / "inventory.ini"
    path.write_text("localhost ansible_connection=local ansible_python_interpreter=%s gpufleet_slurm_node_name=n2\n"
                    % sys.executable)
    argv = [ANSIBLE_PLAYBOOK, str(playbook), "-i", str(path), "-e", "gpufleet_results_dir=%s" % (tmp_path / "results"),
            "-e", "gpufleet_profile=health", "-e", json.dumps({
                "gpufleet_rule_overrides": {"health.gpu_count": {"params": {"expected": 4}}},
                "probe_params": {"health": {"cuda_init": False}}, "gpufleet_gate": False}),
            "-e", "gpufleet_act=slurm", "-e", "gpufleet_slurm_conf=" + cluster.conf]
    # The user's playbook lives elsewhere: the collection is found as if installed.
    env = dict(os.environ, ANSIBLE_COLLECTIONS_PATH=os.path.join(ROOT, "collections"))
    completed = subprocess.run(argv, cwd=ROOT, capture_output=True, text=True, timeout=600, check=False, env=env)
    output = completed.stdout + completed.stderr
    assert completed.returncode == 0, output
    node = cluster.node("n2")
    assert node["drained"] and node["reason"].startswith("gpufleet ") and "4 GPUs" in node["reason"]
    with open(tmp_path / "outcome-localhost.json", encoding="utf-8") as handle:
        kept = json.load(handle)
    assert kept["verdict"] == "fail" and kept["action"]["planned"] == "drain" and kept["action"]["done"] is True
    assert node["reason"] == kept["action"]["why"].split(" (Slurm shows it")[0]
    assert kept["run_id"] in node["reason"] and kept["root_cause"].startswith("health.")


def test_a_controller_that_does_not_answer_is_said_and_nothing_is_recorded(slurm_cluster, tmp_path):
    cluster = slurm_cluster(NODES)
    stored_run(tmp_path / "results", "R1", {"gpu-a": "fail", "gpu-b": "pass", "cpu-c": "pass"})
    cluster.down()
    code, output = act(cluster, tmp_path, "R1")
    assert code != 0, output
    # sinfo --json answers rc 0, no node and {"errors": [{"error": "Unspecified error"}]}: never an empty cluster.
    assert "could not read Slurm's nodes: Slurm answered with errors, so its nodes are unknown" in output
    assert not os.path.exists(os.path.join(str(tmp_path / "results"), "R1", SLURM_ACTIONS_FILE))
    assert outcome(tmp_path, "R1", "gpu-a")["action"]["planned"] == "none"


def test_after_an_upgrade_a_failing_node_in_a_maintenance_reservation_is_drained_and_stays_out(slurm_cluster, tmp_path):
    """docs/acting.md's third recipe: the nodes held in a MAINT reservation while post_upgrade runs; the one that fails
    is drained inside it (the reservation does not stop the drain), stays drained when the reservation is deleted, and
    the one that passed is left as it was."""
    cluster = slurm_cluster(NODES)
    cluster.scontrol("create", "reservation", "ReservationName=post_upgrade", "Nodes=n1,n2", "StartTime=now",
                     "Duration=60", "Users=root", "Flags=MAINT,IGNORE_JOBS")
    shown = cluster.scontrol("show", "reservation", "post_upgrade")
    assert "Nodes=n[1-2]" in shown and "MAINT" in shown, shown
    stored_run(tmp_path / "results", "R1", {"gpu-a": "fail", "gpu-b": "pass", "cpu-c": "pass"})
    code, output = act(cluster, tmp_path, "R1")
    assert code == 0, output
    cluster.scontrol("delete", "ReservationName=post_upgrade")
    assert cluster.node("n1")["drained"] and cluster.node("n1")["reason"] == "gpufleet R1: " + CAUSE
    assert cluster.node("n2") == {"drained": False, "reason": "", "words": ["IDLE"]}


def test_a_host_without_slurm_s_commands_is_told_where_to_act_from(tmp_path):
    """The GPU rig has no Slurm: acting there said only 'Failed to find required executable "scontrol"'."""
    stored_run(tmp_path / "results", "R1", {"gpu-a": "fail"})
    env = dict(os.environ, PATH=os.path.dirname(sys.executable))  # ansible-playbook, python; no scontrol, no sinfo
    argv = [ANSIBLE_PLAYBOOK, "playbooks/act.yml", "-i", inventory(tmp_path, {"gpu-a": "n1"}), "-e", "gpufleet_run_id=R1",
            "-e", "gpufleet_results_dir=%s" % (tmp_path / "results"), "-e", "gpufleet_act=slurm",
            "-e", "ansible_python_interpreter=" + sys.executable]
    completed = subprocess.run(argv, cwd=ROOT, capture_output=True, text=True, timeout=300, check=False, env=env)
    output = completed.stdout + completed.stderr
    assert completed.returncode != 0, output
    assert "Slurm's scontrol is not installed on this host (nor on its PATH): run acting where Slurm's client" in output
    assert "gpufleet_slurm_host" in output


def test_a_node_an_operator_set_down_is_never_drained_over_nor_resumed(slurm_cluster, tmp_path):
    """22.05.8 shows DOWN "admin: RMA" without the DRAIN flag: it was drained over, its reason replaced, and a later
    pass resumed it."""
    cluster = slurm_cluster(NODES)
    cluster.scontrol("update", "NodeName=n1", "State=DOWN", "Reason=admin: RMA")
    stored_run(tmp_path / "results", "R1", {"gpu-a": "fail", "gpu-b": "pass", "cpu-c": "pass"})
    code, output = act(cluster, tmp_path, "R1")
    assert code == 0, output
    assert "out of service by someone else (admin: RMA): never touched" in output
    assert cluster.node("n1")["reason"] == "admin: RMA" and "DOWN" in cluster.node("n1")["words"]
    stored_run(tmp_path / "results", "R2", {"gpu-a": "pass", "gpu-b": "pass", "cpu-c": "pass"})
    code, output = act(cluster, tmp_path, "R2")
    assert code == 0, output
    assert cluster.node("n1")["reason"] == "admin: RMA" and "DOWN" in cluster.node("n1")["words"]


def test_a_cause_with_quotes_is_drained_with_the_reason_recorded_and_resumed(slurm_cluster, tmp_path):
    """scontrol strips a leading or trailing '"' of a reason: the node held a reason its record did not, the drain was
    never confirmed, and no run could resume it."""
    cluster = slurm_cluster(NODES)
    results = tmp_path / "results"
    write_json_atomically(outcome_path(str(results), "R1", "gpu-a"), host_outcome(
        "R1", time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), "gpu-a", "fail",
        ['toolchain.torch_cuda: torch says "12.8"'], True, "gpu-a/dossier.html"), root=str(results))
    code, output = act(cluster, tmp_path, "R1", hosts={"gpu-a": "n1"})
    assert code == 0, output
    assert cluster.node("n1")["reason"] == "gpufleet R1: toolchain.torch_cuda: torch says '12.8'"
    assert record(tmp_path, "R1")["drained"][0]["confirmed"] is True
    stored_run(results, "R2", {"gpu-a": "pass"})
    code, output = act(cluster, tmp_path, "R2", hosts={"gpu-a": "n1"})
    assert code == 0, output
    assert cluster.node("n1")["drained"] is False


def test_a_pass_in_an_older_run_does_not_resume_what_a_newer_run_drained(slurm_cluster, tmp_path):
    cluster = slurm_cluster(NODES)
    stored_run(tmp_path / "results", "R0", {"gpu-a": "pass"}, started="2026-01-01T00:00:00Z")
    stored_run(tmp_path / "results", "R2", {"gpu-a": "fail"})
    code, output = act(cluster, tmp_path, "R2", hosts={"gpu-a": "n1"})
    assert code == 0 and cluster.node("n1")["drained"], output
    code, output = act(cluster, tmp_path, "R0", hosts={"gpu-a": "n1"})
    assert code == 0, output
    assert "passes in run R0, which started 2026-01-01T00:00:00Z, but run R2, which started 20" in output
    assert cluster.node("n1")["reason"] == "gpufleet R2: " + CAUSE


def test_a_record_that_cannot_be_read_stops_the_act_before_slurm_is_touched(slurm_cluster, tmp_path):
    """Any read error made the record start empty and be written over: every drain it listed was forgotten."""
    cluster = slurm_cluster(NODES)
    stored_run(tmp_path / "results", "R1", {"gpu-a": "fail", "gpu-b": "pass", "cpu-c": "pass"})
    broken = os.path.join(str(tmp_path / "results"), "R1", SLURM_ACTIONS_FILE)
    with open(broken, "w", encoding="utf-8") as handle:
        handle.write('{"drained": [{"node": "n9"')
    code, output = act(cluster, tmp_path, "R1")
    assert code != 0, output
    assert "slurm-actions.json cannot be read" in output and "nothing was changed" in output
    assert cluster.node("n1")["drained"] is False
    with open(broken, encoding="utf-8") as handle:
        assert handle.read() == '{"drained": [{"node": "n9"'


def test_act_yml_refuses_an_intake_reason_that_is_this_collection_s_own_prefix(slurm_cluster, tmp_path):
    """playbooks/act.yml runs no check_inputs: the action checks the acting variables itself."""
    cluster = slurm_cluster(NODES)
    stored_run(tmp_path / "results", "R1", {"gpu-a": "pass"})
    code, output = act(cluster, tmp_path, "R1", "-e", json.dumps({"gpufleet_slurm_intake_reason": "gpufleet intake"}),
                       hosts={"gpu-a": "n1"})
    assert code != 0 and "must not start with 'gpufleet '" in output, output


def test_a_drain_whose_scontrol_failed_after_making_it_is_still_recorded_and_resumed_later(slurm_cluster, tmp_path):
    """The drain is recorded before scontrol is asked: here scontrol drains the node and then fails (a wrapper that
    runs the real one and exits 1), so the act fails, yet the node holds a reason its run recorded, and a later pass
    resumes it instead of leaving it out for good."""
    cluster = slurm_cluster(NODES)
    wrapper = tmp_path / "scontrol-then-fail"
    wrapper.write_text("#!%s\nimport subprocess, sys\nsubprocess.run([%r] + sys.argv[1:])\nsys.exit(1)\n"
                       % (sys.executable, shutil.which("scontrol")))
    wrapper.chmod(0o755)
    stored_run(tmp_path / "results", "R1", {"gpu-a": "fail", "gpu-b": "pass", "cpu-c": "pass"})
    code, output = act(cluster, tmp_path, "R1", "-e", "gpufleet_slurm_scontrol=%s" % wrapper)
    assert code != 0 and "not every change was made: drain n1: scontrol failed" in output, output
    assert cluster.node("n1")["reason"] == "gpufleet R1: " + CAUSE
    assert [(entry["node"], entry["confirmed"]) for entry in record(tmp_path, "R1")["drained"]] == [("n1", False)]
    stored_run(tmp_path / "results", "R2", {"gpu-a": "pass", "gpu-b": "pass", "cpu-c": "pass"})
    code, output = act(cluster, tmp_path, "R2")
    assert code == 0, output
    assert cluster.node("n1")["drained"] is False


def test_a_run_re_judged_after_wrong_drains_resumes_them_past_the_breaker(slurm_cluster, tmp_path):
    """docs/acting.md's undo: the run's own drains tripped the breaker of the act on the re-judged run."""
    cluster = slurm_cluster(NODES)
    stored_run(tmp_path / "results", "R1", {"gpu-a": "fail", "gpu-b": "fail", "cpu-c": "pass"})
    code, output = act(cluster, tmp_path, "R1", "-e", "gpufleet_slurm_max_drain_percent=100")
    assert code == 0 and cluster.node("n1")["drained"] and cluster.node("n2")["drained"], output
    stored_run(tmp_path / "results", "R1", {"gpu-a": "pass", "gpu-b": "pass", "cpu-c": "pass"})  # re-judged
    code, output = act(cluster, tmp_path, "R1")
    assert code == 0, output
    assert [cluster.node(node)["drained"] for node in NODES] == [False, False, False]


BUSY = ("health.gpu_processes: GPU 0 (GPU-8eb0778b): busy: 1 compute process(es) of another job on the GPU: python3 "
        "(pid 2172, 62.8 GiB); measurements there share it, so they are not validated")


def test_a_host_whose_only_root_cause_is_a_busy_gpu_is_never_drained(slurm_cluster, tmp_path):
    """Issue 44: someone's job on the GPU is no fault of the node. gpu-a's memtest ran out of the memory the job held
    (verdict error, the probe's error folded under the busy GPU): with error among the verdicts that drain, it stays in
    service and says why, while a real failure beside it is drained."""
    cluster = slurm_cluster(NODES)
    started = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    results = tmp_path / "results"
    for host, verdict, reasons, actions in (("gpu-a", "error", [BUSY], ["rerun_when_idle"]),
                                            ("gpu-b", "fail", [CAUSE, BUSY], ["drain", "rerun_when_idle"]),
                                            ("cpu-c", "pass", [], [])):
        write_json_atomically(outcome_path(str(results), "R1", host),
                              host_outcome("R1", started, host, verdict, reasons, verdict != "pass", host + "/dossier.html", actions),
                              root=str(results))
    code, output = act(cluster, tmp_path, "R1", "-e", '{"gpufleet_slurm_drain_on": ["fail", "error", "unreachable"]}',
                       "-e", "gpufleet_slurm_max_drain_percent=100")
    assert code == 0, output
    assert cluster.node("n1")["drained"] is False
    assert cluster.node("n2")["drained"] is True and cluster.node("n2")["reason"] == "gpufleet R1: " + CAUSE
    left = outcome(tmp_path, "R1", "gpu-a")["action"]
    assert left["planned"] == "leave" and "a busy GPU is not a broken one, never drained for it" in left["why"]


def test_a_node_where_a_job_runs_gets_only_the_probes_that_cannot_disturb_it(slurm_cluster, tmp_path):
    """Issue 44: with gpufleet_act=slurm, validate.yml reads Slurm before probing; on a node Slurm shows allocated (a
    real job holds it), only health (without CUDA init), tuning and fabric (without traffic) run, the console and the
    dossier name the probes not run and why, and the node is not drained for it. The all-reduce across hosts leaves
    it out too (it ran there before)."""
    cluster = slurm_cluster(NODES)
    job = cluster.job("n2")
    try:
        path = tmp_path / "inventory.ini"
        path.write_text("localhost ansible_connection=local ansible_python_interpreter=%s gpufleet_slurm_node_name=n2\n"
                        % sys.executable)
        results = tmp_path / "results"
        argv = [ANSIBLE_PLAYBOOK, "validate.yml", "-i", str(path), "-e", "gpufleet_results_dir=%s" % results,
                "-e", "gpufleet_run_id=R1", "-e", "gpufleet_profile=beside",
                "-e", json.dumps({"gpufleet_profiles": {"beside": ["health", "tuning", "membw"]}}),
                "-e", "gpufleet_act=slurm", "-e", "gpufleet_slurm_conf=" + cluster.conf,
                # the all-reduce across hosts is a probing play of its own: it must leave the node alone too
                "-e", "gpufleet_collective_hosts=true",
                "-e", json.dumps({"collective_hosts_params": {"backend": "gloo", "cpu_max_bytes": 1048576}})]
        completed = subprocess.run(argv, cwd=ROOT, capture_output=True, text=True, timeout=600, check=False)
        output = completed.stdout + completed.stderr
        assert "Slurm shows this host's node allocated or mixed (a job runs there): only the probes that cannot disturb a job run " \
               "(health, tuning, with their quiet parameters); not run: membw" in " ".join(output.split()), output
        host = results / "R1" / "localhost"
        assert (host / "health.json").is_file() and (host / "tuning.json").is_file() and not (host / "membw.json").exists()
        assert "localhost is left out of the all-reduce of 0 host(s): Slurm shows a job on its node" in " ".join(output.split()), output
        assert not (host / "collective_hosts.json").exists()
        with open(host / "health.json", encoding="utf-8") as handle:
            health = json.load(handle)
        # its quiet parameters: no CUDA context next to the job (where the data holds the section: NVML may be absent here)
        assert health["data"].get("cuda_init", {"unavailable": "skipped: parameter cuda_init is false"}) == {
            "unavailable": "skipped: parameter cuda_init is false"}
        with open(host / "inputs.json", encoding="utf-8") as handle:
            assert json.load(handle)["not_run"]["probes"] == ["membw"]
        dossier = (host / "dossier.md").read_text(encoding="utf-8")
        assert "(host.not\\_run)" in dossier and "not run here: membw (Slurm showed the node allocated or mixed" in dossier
        assert cluster.node("n2")["drained"] is False
    finally:
        cluster.cancel(job)


def test_a_night_sliced_into_runs_cannot_drain_more_than_the_partition_s_share(slurm_cluster, tmp_path):
    """Issue 45: act.yml runs in one night, each over a 2-host slice with one failing host, over one partition: each
    run said "1 of N node(s) to drain, 1 allowed", and half the partition was drained. The nodes this collection holds
    drained from earlier runs now count against the share: the second run trips the breaker and names them."""
    nodes = {"g%d" % index: ["gpu"] for index in range(6)}
    cluster = slurm_cluster(nodes)
    for night_run, (failing, passing) in enumerate((("g0", "g1"), ("g2", "g3"))):
        run_id = "R%d" % (night_run + 1)
        slice_hosts = {"host-" + failing: failing, "host-" + passing: passing}
        stored_run(tmp_path / "results", run_id, {"host-" + failing: "fail", "host-" + passing: "pass"})
        code, output = act(cluster, tmp_path, run_id, hosts=slice_hosts)
        if night_run == 0:
            assert code == 0, output
            assert "partition gpu: 1 of 6 node(s) to drain, 1 allowed" in output
    assert code != 0, output
    assert "partition gpu: 2 of 6 node(s) to drain, 1 allowed (already 1 of 6 drained by earlier runs: g0): OVER" in output
    assert "circuit breaker tripped: nothing was drained or resumed" in output
    assert [node for node in sorted(nodes) if cluster.node(node)["drained"]] == ["g0"]
