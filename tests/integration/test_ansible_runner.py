"""validate.yml under ansible-runner, the engine AWX and Ansible Automation Platform start every job with, against the
SSH test fleet (tests/fleet/netns_fleet.py), and the run read back from the runner's artifacts.

Each job gets a private data dir laid out as AWX lays out a job's: docs/awx/private_data_dir copied (project/ with a
playbook that imports the collection's, env/envvars, env/extravars with the job template's extra variables), the job's
inventory as inventory/hosts, and the job's own extra variables merged into env/extravars as AWX merges a launch's and a
workflow's (here: a results directory of the test's own; health without its CUDA initialisation, which a CPU host
cannot prove anyway). The collection is the built tarball installed as a user would (installed_collection), found
through ANSIBLE_COLLECTIONS_PATH in env/envvars: it stands in for the execution environment, whose image holds the
collection (execution-environment.yml). The runner runs with process isolation off: no container, and no AWX server.
docs/scale.md ("AWX and Ansible Automation Platform") quotes the commands below, and the test checks that it does.

On these CPU hosts the health profile proves none of its headline checks, so every host is not_validated and the gate
refuses it (issue 44): the truthful outcome of the job is status "failed" with rc 2, each host failed by the playbook's
last play, as AWX would show the job. Each host's verdict is carried by the report task's event (one event on the
controller: every host's verdict, gate and dossier) and, in a whole run, by the host's own event of the set_fact that
gives it gpufleet_outcome; the test holds both to fleet.json.
"""
import importlib.metadata
import json
import os
import shlex
import shutil
import signal
import subprocess

import yaml

from installed_collection import BIN, ROOT, clean_env  # pylint: disable=import-error

SKELETON = os.path.join(ROOT, "docs", "awx", "private_data_dir")
SCALE_DOC = os.path.join(ROOT, "docs", "scale.md")
RUN_TIMEOUT_S = 600
# The job's own extra variables on top of the job template's (env/extravars): health without CUDA init in a fresh
# process (torch has no CUDA here) keeps a host's probe to a few seconds.
TEST_EXTRAVARS = {"probe_params": {"health": {"cuda_init": False}}}
# A slice of a sliced job template: joins the run that the workflow names, probes only (docs/scale.md, docs/store.md).
SLICE_EXTRAVARS = {"gpufleet_resume": True, "gpufleet_report": False}
GATE_REFUSES = "refused by the gate: not validated"


def runner_argv(job, playbook):
    """The command as docs/scale.md gives it, run from the folder that holds the job's private data dir."""
    return ["ansible-runner", "run", job, "-p", playbook, "--ident", job]


def lay_out_job(jobs, job, inventory, extravars, collections_path):
    """jobs/<job>: the skeleton, inventory/hosts, env/extravars with extravars merged in, ANSIBLE_COLLECTIONS_PATH."""
    private = jobs / job
    shutil.copytree(SKELETON, private)
    (private / "inventory").mkdir()
    (private / "inventory" / "hosts").write_text(yaml.safe_dump(inventory, sort_keys=False))
    for name, extra in (("extravars", extravars), ("envvars", {"ANSIBLE_COLLECTIONS_PATH": str(collections_path)})):
        path = private / "env" / name
        merged = yaml.safe_load(path.read_text())
        merged.update(extra)
        path.write_text(yaml.safe_dump(merged, sort_keys=False))
    return private


def start_job(jobs, home, job, playbook):
    env = clean_env(home, PATH=os.pathsep.join((BIN, os.environ.get("PATH", ""))))
    argv = runner_argv(job, playbook)
    # its own session, so that finish_job can end the runner and the ansible-playbook it started together
    return subprocess.Popen([os.path.join(BIN, argv[0])] + argv[1:], cwd=str(jobs), env=env, stdin=subprocess.DEVNULL,  # pylint: disable=consider-using-with
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, start_new_session=True)


def end_job(process):
    """Kill a job still running: the runner and the ansible-playbook it started (for a finally:)."""
    if process.poll() is None:
        os.killpg(process.pid, signal.SIGKILL)
        process.communicate(timeout=30)


def finish_job(process):
    """The job's output once it has ended; one still running after RUN_TIMEOUT_S is killed."""
    try:
        output = process.communicate(timeout=RUN_TIMEOUT_S)[0]
    finally:
        end_job(process)
    return output


def artifacts(jobs, job):
    """(status, rc, the job events in order) from jobs/<job>/artifacts/<ident>."""
    folder = jobs / job / "artifacts" / job
    events = [json.loads(path.read_text()) for path in (folder / "job_events").glob("*.json")]
    return (folder / "status").read_text(), (folder / "rc").read_text(), sorted(events, key=lambda event: event["counter"])


def events_of(events, kind, action):
    return [event for event in events if event["event"] == kind and event["event_data"].get("task_action") == action]


def reported(events) -> dict:
    """{host: its entry} from the report task's one event (gpufleet.validation.report, on the controller)."""
    found = events_of(events, "runner_on_ok", "gpufleet.validation.report")
    assert len(found) == 1, [event["event_data"].get("task") for event in events]
    assert found[0]["event_data"]["host"] == "localhost"
    return found[0]["event_data"]["res"]["hosts"]


def fleet_json_verdicts(results, run_id) -> dict:
    with open(results / run_id / "fleet.json", encoding="utf-8") as handle:
        return {host: entry["verdict"] for host, entry in json.load(handle)["hosts"].items()}


def awx_slice(names, number, count) -> list:
    """The hosts of slice ``number`` (from 1) of ``count``, as AWX picks them for a slice job's inventory
    (Inventory.get_script_data): the hosts sorted by name, every count-th from the slice's number."""
    return sorted(names)[number - 1::count]


def inventory_of(fleet, names=None) -> dict:
    """The fleet's inventory, or only the hosts named with their groups (a group left empty dropped), as AWX gives a
    slice job its slice."""
    with open(fleet.inventory_path, encoding="utf-8") as handle:
        inventory = yaml.safe_load(handle)
    if names is not None:
        children = inventory["all"]["children"]
        for group in list(children):
            kept = {name: value for name, value in children[group]["hosts"].items() if name in names}
            if kept:
                children[group]["hosts"] = kept
            else:
                del children[group]
    return inventory


def test_the_docs_give_the_commands_this_test_runs():
    with open(SCALE_DOC, encoding="utf-8") as handle:
        doc = handle.read()
    for argv in (runner_argv("whole", "gpufleet_validate.yml"), runner_argv("slice1", "gpufleet_validate.yml"),
                 runner_argv("slice2", "gpufleet_validate.yml"), runner_argv("report", "gpufleet_report.yml")):
        assert shlex.join(argv) in doc, shlex.join(argv)
    assert "docs/awx/private_data_dir" in doc and "tests/integration/test_ansible_runner.py" in doc


def test_the_runner_run_here_is_the_one_the_execution_environment_installs():
    with open(os.path.join(ROOT, "execution-environment.yml"), encoding="utf-8") as handle:
        pinned = yaml.safe_load(handle)["dependencies"]["ansible_runner"]["package_pip"]
    assert pinned == "ansible-runner==%s" % importlib.metadata.version("ansible-runner")


def test_validate_under_ansible_runner_reports_each_host_verdict_in_its_job_events(netns_fleet, installed_collection, tmp_path):
    fleet = netns_fleet(hosts=2, rack_size=1, prefix="awx")
    jobs, results = tmp_path / "jobs", tmp_path / "results"
    jobs.mkdir()
    extravars = dict(TEST_EXTRAVARS, gpufleet_results_dir=str(results), gpufleet_run_id="whole")
    lay_out_job(jobs, "whole", inventory_of(fleet), extravars, installed_collection.path)
    output = finish_job(start_job(jobs, tmp_path / "home", "whole", "gpufleet_validate.yml"))

    status, rc, events = artifacts(jobs, "whole")
    assert (status, rc) == ("failed", "2"), output
    # The installed collection ran, not this tree.
    starts = [event["event_data"] for event in events if event["event"] == "playbook_on_task_start"]
    assert any(str(installed_collection.collection) in data.get("task_path", "") for data in starts), output
    verdicts = fleet_json_verdicts(results, "whole")
    assert sorted(verdicts) == sorted(fleet.names), verdicts
    report = reported(events)
    assert {host: entry["verdict"] for host, entry in report.items()} == verdicts
    for name in fleet.names:
        assert verdicts[name] == "not_validated", (name, report[name]["line"])
        assert report[name]["gate"] is True, report[name]
        outcome = [event["event_data"]["res"]["ansible_facts"]["gpufleet_outcome"]
                   for event in events_of(events, "runner_on_ok", "ansible.builtin.set_fact")
                   if event["event_data"]["host"] == name and "gpufleet_outcome" in event["event_data"]["res"].get("ansible_facts", {})]
        assert [(entry["verdict"], entry["run_id"]) for entry in outcome] == [(verdicts[name], "whole")], outcome
        failed = [event["event_data"]["res"]["msg"] for event in events_of(events, "runner_on_failed", "ansible.builtin.fail")
                  if event["event_data"]["host"] == name]
        assert len(failed) == 1 and failed[0].startswith(GATE_REFUSES), failed
    stats = [event for event in events if event["event"] == "playbook_on_stats"]
    assert len(stats) == 1 and stats[0]["event_data"]["failures"] == {name: 1 for name in fleet.names}, stats


def test_two_slice_jobs_and_a_report_job_judge_every_host_once(netns_fleet, installed_collection, tmp_path):
    """AWX's job slicing with job_slice_count 2, as its slice jobs and the workflow's report node would run: each slice
    job gets its share of the inventory, the workflow's run id and the slice variables; both run at once; then the
    report job (playbooks/report.yml) over the whole inventory."""
    fleet = netns_fleet(hosts=3, rack_size=2, prefix="awxs")
    jobs, results, home = tmp_path / "jobs", tmp_path / "results", tmp_path / "home"
    jobs.mkdir()
    run_vars = dict(TEST_EXTRAVARS, gpufleet_results_dir=str(results), gpufleet_run_id="20261207T020000Z-nightly")
    shares = {"slice%d" % number: awx_slice(fleet.names, number, 2) for number in (1, 2)}
    for job, names in shares.items():
        lay_out_job(jobs, job, inventory_of(fleet, names), dict(run_vars, **SLICE_EXTRAVARS), installed_collection.path)
    started = [start_job(jobs, home, job, "gpufleet_validate.yml") for job in shares]  # at once, as AWX may run them
    try:
        outputs = [finish_job(process) for process in started]
    finally:
        for process in started:
            end_job(process)
    for job, output in zip(shares, outputs):
        status, rc, events = artifacts(jobs, job)
        assert (status, rc) == ("successful", "0"), output
        assert not events_of(events, "runner_on_ok", "gpufleet.validation.report"), job  # a slice probes only
        probed = {event["event_data"]["host"] for event in events_of(events, "runner_on_ok", "gpufleet.validation.probe")}
        assert probed == set(shares[job]), (job, probed)
    assert not (results / run_vars["gpufleet_run_id"] / "fleet.json").exists()

    lay_out_job(jobs, "report", inventory_of(fleet), dict(run_vars, gpufleet_hosts="all"), installed_collection.path)
    output = finish_job(start_job(jobs, home, "report", "gpufleet_report.yml"))
    status, rc, events = artifacts(jobs, "report")
    # The gate refuses every host (above); report.yml fails the controller for them, as no later play of its own can.
    assert (status, rc) == ("failed", "2"), output
    verdicts = fleet_json_verdicts(results, run_vars["gpufleet_run_id"])
    assert sorted(verdicts) == sorted(fleet.names) and set(verdicts.values()) == {"not_validated"}, verdicts
    assert {host: entry["verdict"] for host, entry in reported(events).items()} == verdicts
    failed = events_of(events, "runner_on_failed", "ansible.builtin.fail")
    assert len(failed) == 1 and failed[0]["event_data"]["host"] == "localhost", failed
    for name in fleet.names:
        assert name in failed[0]["event_data"]["res"]["msg"], (name, failed[0]["event_data"]["res"]["msg"])
    # Two writers joined the run, each its own ansible-playbook; neither with a --limit (AWX slices the inventory).
    with open(results / run_vars["gpufleet_run_id"] / "run.json", encoding="utf-8") as handle:
        writers = json.load(handle)["writers"]
    assert len({writer["writer_id"] for writer in writers}) == 2 and [writer["limit"] for writer in writers] == [None, None], writers
