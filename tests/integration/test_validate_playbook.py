"""The real `ansible-playbook validate.yml` against real hosts: the local machine, and hosts that fail."""
import json
import os
import re
import shutil
import socket
import subprocess
import sys

import pytest
from junitparser import Error, Failure, JUnitXml
from prometheus_client.parser import text_string_to_metric_families

from ansible_collections.gpufleet.validation.plugins.plugin_utils.report.rerun import rerun_command
from ansible_collections.gpufleet.validation.plugins.plugin_utils.store.schemas import schema_validator
from ansible_collections.gpufleet.validation.plugins.plugin_utils.store.run_order import stored_run_ids

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BIN = os.path.dirname(sys.executable)
ANSIBLE_PLAYBOOK = os.path.join(BIN, "ansible-playbook")
ANSIBLE_GALAXY = os.path.join(BIN, "ansible-galaxy")


def run_playbook(results_dir, *extra, cwd=ROOT, playbook="validate.yml", env=None):
    argv = [ANSIBLE_PLAYBOOK, playbook, "-e", "gpufleet_results_dir=%s" % results_dir] + list(extra)
    completed = subprocess.run(argv, cwd=cwd, capture_output=True, text=True, timeout=900, env=env, check=False)
    return completed.returncode, completed.stdout + completed.stderr


def only_run_dir(results_dir):
    runs = stored_run_ids(str(results_dir))  # the run index and the history page beside the runs are no runs
    assert len(runs) == 1, runs
    return os.path.join(results_dir, runs[0])


def assert_schema_valid(envelope):
    """Validated here independently of the action plugin's own check."""
    schema_validator("envelope.schema.json").validate(envelope)
    if envelope["status"] in ("ok", "partial") or (envelope["status"] == "unavailable" and envelope["data"]):
        schema_validator(envelope["probe"] + ".schema.json").validate(envelope["data"])


# The store's own records (docs/store.md), not probe results.
STORE_FILES = ("run.json", "writer.json", "inputs.json")
# Report only: every profile gates (issue 44) and the gate refuses this GPU-less machine, so a test about something
# other than the run's outcome that reads a completed run's exit code asks for no gate.
REPORT_ONLY = ("-e", "gpufleet_gate=false")
# On this machine (no GPU: the health probe ends unavailable) what health promises is not proven: its verdict is
# not_validated, which the gate refuses in every profile that runs health (issue 44). Where the PCI bus shows no
# NVIDIA GPU, the root cause is that this is no GPU host, and the unproven headlines follow from it (issue 46).
NOT_PROVEN_HERE = "not proven: health.cuda_init, health.device_majors, health.gpu_count: the health probe ended unavailable: "
NO_GPU_HOST_HERE = "host.gpu_measured: no NVIDIA GPU on this "
FOLLOWS_FROM_NO_GPU = ("not proven: health.cuda_init, health.device_majors, health.gpu_count",  # and the profile's other headlines
                       ": each follows from host.gpu_measured, the root cause above")


def first_reason_here(reasons):
    """What the verdict says first on this machine: that it is no GPU host (with the headlines that follow from it
    next) where its PCI bus is readable, else that health's headlines are not proven."""
    if reasons and reasons[0].startswith(NO_GPU_HOST_HERE):
        assert reasons[1].startswith(FOLLOWS_FROM_NO_GPU[0]) and reasons[1].endswith(FOLLOWS_FROM_NO_GPU[1]), reasons
        return NO_GPU_HOST_HERE
    return NOT_PROVEN_HERE


def assert_refused_here(run_dir, output, fleet):
    """The run's outcome on this GPU-less machine: localhost not_validated (health.cuda_init not proven, the health probe
    unavailable), refused by the gate in the summary, fleet.json, the index, the dossier and junit.xml."""
    with open(os.path.join(run_dir, "localhost", "health.json")) as handle:
        health = json.load(handle)
    if health["status"] != "unavailable":
        pytest.skip("the health probe ran here (%s): this machine has a GPU stack" % health["status"])
    host = fleet["hosts"]["localhost"]
    assert host["verdict"] == "not_validated", host
    assert host["refused_by_gate"] is True and fleet["gate"]["enforced"] is True and fleet["gate"]["passed"] is False
    first = first_reason_here(host["reasons"])
    assert host["reasons"][0].startswith(first), host["reasons"]
    assert "health.cuda_init" in [proof["check"] for proof in host["not_proven"]], host["not_proven"]
    assert "localhost: not_validated - %s" % first in output, output
    assert "the gate refused 1 host(s): localhost" in output, output
    assert "fatal: [localhost]: FAILED! => {\"changed\": false, \"msg\": \"refused by the gate: not validated; the reasons are" in output
    for name in ("index.html", "index.md"):
        with open(os.path.join(run_dir, name)) as handle:
            assert "Refused by the gate: 1 host of 1 (localhost); the run exits 2." in handle.read(), name
    for name in ("dossier.html", "dossier.md"):
        with open(os.path.join(run_dir, "localhost", name)) as handle:
            dossier = re.sub(r"\\(.)", r"\1", handle.read()) if name.endswith(".md") else handle.read()  # Markdown's escapes out
        assert "Refused by the gate" in dossier and "Not proven" in dossier and "health.cuda_init" in dossier, name
    (suite,) = [suite for suite in JUnitXml.fromfile(os.path.join(run_dir, "junit.xml")) if suite.name == "localhost"]
    failed = [(case.name, result) for case in suite for result in case.result if isinstance(result, (Failure, Error))]
    assert [(name, type(result).__name__) for name, result in failed] == [("host.verdict", "Failure")], failed
    assert failed[0][1].message.startswith(first), failed[0][1].message


def every_result_file(run_dir):
    for folder, subfolders, files in os.walk(run_dir):
        if folder == str(run_dir):
            subfolders[:] = [name for name in subfolders if name != "outcomes"]  # the report's, docs/acting.md
        for name in files:
            if name.endswith(".json") and name not in STORE_FILES:
                yield os.path.join(folder, name)


@pytest.fixture(scope="module")
def local_run(tmp_path_factory):
    """The README's first command as it is: the quick profile on localhost, its gate on."""
    results = tmp_path_factory.mktemp("results")
    code, output = run_playbook(results)
    return code, output, results


def test_validate_localhost_writes_schema_valid_results(local_run):
    code, output, results = local_run
    assert code == 2, output  # the gate refuses this GPU-less machine (assert_refused_here)
    run_dir = only_run_dir(results)
    files = list(every_result_file(run_dir))
    expected = ["fleet.json", "localhost/fabric.json", "localhost/health.json", "localhost/membw.json"]
    assert sorted(os.path.relpath(path, run_dir) for path in files) == expected
    with open(os.path.join(run_dir, "localhost", "fabric.json")) as handle:
        assert_schema_valid(json.load(handle))
    with open(os.path.join(run_dir, "localhost", "health.json")) as handle:
        assert_schema_valid(json.load(handle))
    with open(os.path.join(run_dir, "fleet.json")) as handle:
        schema_validator("fleet.schema.json").validate(json.load(handle))
    with open(os.path.join(run_dir, "localhost", "health.json")) as handle:
        health = json.load(handle)
    assert health["host"] == "localhost"
    assert health["run_id"] == os.path.basename(run_dir)
    # bound to its start, and timed on the controller's clock, which is this machine's own (issue 45)
    assert len(health["nonce"]) == 32 and health["controller"]["host_clock_ahead_s"] == 0.0
    assert health["controller"]["started"] <= health["controller"]["ended"]
    assert health["data"]["platform"]["hostname"] == socket.gethostname()
    assert os.path.realpath(health["command"][0]) == os.path.realpath(sys.executable)
    assert health["status"] in ("ok", "partial", "unavailable")
    if health["status"] != "ok":
        assert health["reason"]
    assert os.readlink(os.path.join(results, "latest")) == os.path.basename(run_dir)


def test_validate_localhost_renders_the_dossier_and_the_index(local_run):
    code, output, results = local_run
    run_dir = only_run_dir(results)
    with open(os.path.join(run_dir, "localhost", "health.json")) as handle:
        health = json.load(handle)
    with open(os.path.join(run_dir, "localhost", "dossier.html")) as handle:
        dossier = handle.read()
    with open(os.path.join(run_dir, "localhost", "dossier.md")) as handle:
        dossier_md = handle.read()
    with open(os.path.join(run_dir, "index.html")) as handle:
        index = handle.read()
    assert health["data"]["platform"]["kernel_release"] in dossier
    assert health["data"]["platform"]["kernel_release"] in dossier_md
    # Issue 31: the command as run names a temporary copy deleted after the run; beside it, lines a person can paste
    # (tests/unit/report/test_rerun_command.py runs them), with the parameters the probe ran with.
    assert isinstance(health["params"], dict)
    assert "```\n%s\n```" % rerun_command(health, "localhost") in dossier_md
    if health["reason"]:
        assert health["reason"].split(":")[0] in dossier
    assert 'href="localhost/dossier.html"' in index
    assert "fleet index: %s" % os.path.join(run_dir, "index.html") in output
    # issue 44: the dossier and the index open with what the gate did and what is not proven
    assert "Refused by the gate" in dossier and "Refused by the gate" in dossier_md and "Refused by the gate" in index
    assert "Not proven" in dossier and "Not proven" in dossier_md and "not proven" in index


def test_validate_localhost_judges_and_writes_the_standard_outputs(local_run):
    code, output, results = local_run
    run_dir = only_run_dir(results)
    with open(os.path.join(run_dir, "fleet.json")) as handle:
        fleet = json.load(handle)
    verdict = fleet["hosts"]["localhost"]["verdict"]
    assert "localhost: %s" % verdict in output
    suites = JUnitXml.fromfile(os.path.join(run_dir, "junit.xml"))
    names = [suite.name for suite in suites]
    assert "localhost" in names
    # issue 44: every profile gates, and a pass is a proof; quick's health headlines are not proven on this machine
    assert code == 2, output
    assert_refused_here(run_dir, output, fleet)
    families = {family.name: family for family in
                text_string_to_metric_families(open(os.path.join(run_dir, "gpufleet.prom")).read())}
    verdict_samples = [sample for sample in families["gpufleet_host_verdict"].samples
                       if sample.labels.get("host") == "localhost" and sample.value == 1]
    assert [sample.labels["verdict"] for sample in verdict_samples] == [verdict]
    # issue 46: the rules of the probes quick does not run, or that measured on no host, are no finding to alert on
    assert [entry["id"] for entry in fleet["unmatched_rules"] if entry["kind"] == "matched_nothing"] == []
    assert {entry["kind"] for entry in fleet["unmatched_rules"]} >= {"not_run_by_profile"}
    assert [sample.value for sample in families["gpufleet_unmatched_rules"].samples] == [0]
    assert "(rules that matched nothing)" not in names


def test_acceptance_fails_the_run_and_names_the_failed_host(tmp_path):
    overrides = json.dumps({"gpufleet_profile": "acceptance",
                            "gpufleet_rule_overrides": {"health.gpu_count": {"params": {"expected": 8}}}})
    code, output = run_playbook(tmp_path / "results", "-e", overrides)
    run_dir = only_run_dir(tmp_path / "results")
    with open(os.path.join(run_dir, "fleet.json")) as handle:
        fleet = json.load(handle)
    if fleet["hosts"]["localhost"]["verdict"] == "pass":
        pytest.skip("this machine has 8 GPUs")
    assert code == 2, output
    # Lines of text, not a Python list; the failing host (here the controller itself) fails on its own line.
    assert "the gate refused 1 host(s): localhost" in output
    assert "['the gate refused" not in output and "Action failed: [" not in output
    assert output.count("localhost: fail - ") == 1, output
    assert "fatal: [localhost]: FAILED! => {\"changed\": false, \"msg\": \"refused by the gate: fail;" in output


def test_quick_profile_gates_the_same_failure(tmp_path):
    """Issue 44: every profile gates, quick as acceptance (before, quick reported the failure and exited 0)."""
    overrides = json.dumps({"gpufleet_rule_overrides": {"health.gpu_count": {"params": {"expected": 8}}}})
    code, output = run_playbook(tmp_path / "results", "-e", overrides)
    assert code == 2, output
    assert "the gate refused 1 host(s): localhost" in output
    assert "fatal: [localhost]: FAILED! => {\"changed\": false, \"msg\": \"refused by the gate: fail;" in output
    # The verdict is said once, in the summary, not again as a warning.
    assert output.count("localhost: fail - ") == 1, output
    assert "[WARNING]: localhost: fail" not in output


def test_every_profile_gates_and_gpufleet_gate_false_reports_only(local_run, tmp_path):
    """Issue 44, point 9, on this GPU-less machine: the quick profile (the README's first command), a profile of the
    user's own (before: only acceptance gated, so it exited 0) and -e gpufleet_gate=false (the one switch that reports
    only) on the same unproven host."""
    code, output, results = local_run
    run_dir = only_run_dir(results)
    with open(os.path.join(run_dir, "fleet.json")) as handle:
        fleet = json.load(handle)
    assert code == 2, output
    assert_refused_here(run_dir, output, fleet)
    assert fleet["gate"]["gating_hosts"] == ["localhost"], fleet["gate"]
    assert "the gate is off" not in output

    mine = ("-e", json.dumps({"gpufleet_profiles": {"mine": ["health"]}, "gpufleet_profile": "mine",
                              "probe_params": {"health": {"cuda_init": False}}}))
    code, output = run_playbook(tmp_path / "mine", *mine)
    mine_dir = only_run_dir(tmp_path / "mine")
    with open(os.path.join(mine_dir, "fleet.json")) as handle:
        fleet = json.load(handle)
    assert code == 2, output
    assert_refused_here(mine_dir, output, fleet)

    code, output = run_playbook(tmp_path / "off", *mine, *REPORT_ONLY)
    off_dir = only_run_dir(tmp_path / "off")
    with open(os.path.join(off_dir, "fleet.json")) as handle:
        fleet = json.load(handle)
    assert code == 0, output
    host = fleet["hosts"]["localhost"]
    # the same verdict and proofs, said, not enforced
    assert host["verdict"] == "not_validated" and host["refused_by_gate"] is True and host["not_proven"], host
    assert fleet["gate"]["enforced"] is False and fleet["gate"]["passed"] is False, fleet["gate"]
    assert "the gate is off (gpufleet_gate: false): this run reports only, it refuses no host" in output, output
    assert "the gate refused" not in output and "fatal: [localhost]" not in output, output
    assert recap(output)["localhost"]["failed"] == 0, output
    with open(os.path.join(off_dir, "index.html")) as handle:
        assert "The gate is off (gpufleet_gate: false): this run reports only; it would refuse 1 host: localhost." in handle.read()
    with open(os.path.join(off_dir, "localhost", "dossier.html")) as handle:
        assert "The gate would refuse this host (this run reports only: gpufleet_gate is false)" in handle.read()
    (suite,) = [suite for suite in JUnitXml.fromfile(os.path.join(off_dir, "junit.xml")) if suite.name == "localhost"]
    # a not_validated host fails its host.verdict case whatever the gate: the file reports the host (docs/reports.md)
    failed = [(case.name, type(result).__name__) for case in suite for result in case.result if isinstance(result, (Failure, Error))]
    assert failed == [("host.verdict", "Failure")], failed


def test_the_full_profile_runs_every_measurement_probe_on_the_cpu_path(tmp_path):
    code, output = run_playbook(tmp_path / "results", "-e", "gpufleet_profile=full", *REPORT_ONLY)
    assert code == 0, output
    run_dir = only_run_dir(tmp_path / "results")
    for probe in ("health", "membw", "memtest", "gemm", "hostbw"):
        with open(os.path.join(run_dir, "localhost", probe + ".json")) as handle:
            envelope = json.load(handle)
        assert_schema_valid(envelope)
        if probe != "health":
            assert envelope["status"] == "ok", envelope["reason"]
            assert [device.get("kind") or device["device"]["kind"] for device in envelope["data"]["devices"]] == ["cpu"]
            # issue 44: every measuring probe records the GPUs' other processes; on this CPU machine, why it cannot
            record = envelope["data"]["foreign_gpu_processes"]
            assert list(record) == ["unavailable"] and record["unavailable"], record
    with open(os.path.join(run_dir, "localhost", "gemm.json")) as handle:
        gemm = json.load(handle)
    assert any("memory_bandwidth_gbps from this run's membw result" in note for note in gemm["notes"])
    # every timed case verified bit for bit on the CPU path (issue 35)
    assert all(result["verification"]["equal"] for result in gemm["data"]["devices"][0]["results"]
               if "tflops" in result["measurement"])
    with open(os.path.join(run_dir, "localhost", "membw.json")) as handle:
        membw = json.load(handle)
    assert membw["data"]["devices"][0]["headline"]["bandwidth_gbps"] > 0
    with open(os.path.join(run_dir, "localhost", "precision.json")) as handle:
        precision = json.load(handle)
    assert precision["status"] == "ok", precision["reason"]  # on the slice its archive carried: no package, no parameter
    assert precision["data"]["checkpoint"]["source"] == "shipped" and len(precision["data"]["tensors"]) == 3
    with open(os.path.join(run_dir, "localhost", "dossier.html")) as handle:
        dossier = handle.read()
    assert "Device copy bandwidth by buffer size" in dossier and "Roofline of CPU" in dossier
    assert "Products verified: after the timed repeats against before, same inputs" in dossier
    assert "Checkpoint: the collection&#39;s shipped slice" in dossier or "Checkpoint: the collection's shipped slice" in dossier


def test_check_mode_runs_nothing_and_says_so(tmp_path):
    code, output = run_playbook(tmp_path, "--check")
    assert code == 0, output
    assert "check mode: probe health was not run on localhost" in output
    assert not list(every_result_file(tmp_path))


def test_a_missing_interpreter_is_recorded_and_the_run_goes_on(tmp_path):
    missing = str(tmp_path / "nowhere" / "python3")
    code, output = run_playbook(tmp_path / "results", "-e", "gpufleet_python=%s" % missing, *REPORT_ONLY)
    assert code == 0, output
    run_dir = only_run_dir(tmp_path / "results")
    with open(os.path.join(run_dir, "localhost", "health.json")) as handle:
        health = json.load(handle)
    assert_schema_valid(health)
    assert health["status"] == "error"
    assert missing in health["reason"] and "gpufleet_python" in health["reason"]
    with open(os.path.join(run_dir, "index.md")) as handle:
        assert "error" in handle.read()


def _closed_local_port():
    with socket.socket() as probe_socket:
        probe_socket.bind(("127.0.0.1", 0))
        return probe_socket.getsockname()[1]


@pytest.mark.skipif(shutil.which("ssh") is None, reason="needs the ssh client")
def test_an_unreachable_host_is_reported_and_the_others_are_validated(tmp_path):
    inventory = tmp_path / "inventory.yml"
    inventory.write_text(
        "all:\n"
        "  hosts:\n"
        "    localhost:\n"
        "      ansible_connection: local\n"
        "      ansible_python_interpreter: %s\n"
        "    ghost:\n"
        "      ansible_host: 127.0.0.1\n"
        "      ansible_port: %d\n"
        "      ansible_connection: ssh\n"
        "      ansible_ssh_common_args: -o ConnectTimeout=5\n" % (sys.executable, _closed_local_port()))
    # report only: a host not reached fails the run even so, and localhost (refused by the gate here) is not failed for it
    code, output = run_playbook(tmp_path / "results", "-i", str(inventory), *REPORT_ONLY)
    run_dir = only_run_dir(tmp_path / "results")
    with open(os.path.join(run_dir, "ghost", "health.json")) as handle:
        ghost = json.load(handle)
    assert_schema_valid(ghost)
    assert ghost["status"] == "unreachable"
    assert "could not be reached" in ghost["reason"]
    with open(os.path.join(run_dir, "localhost", "health.json")) as handle:
        assert json.load(handle)["status"] in ("ok", "partial", "unavailable")
    with open(os.path.join(run_dir, "index.md")) as handle:
        index = handle.read()
    assert "ghost" in index and "unreachable" in index
    assert "ghost: unreachable" in output
    assert code == 2, output
    assert "1 host(s) could not be validated because they were not reached: ghost." in output
    assert_console_names_the_unreachable_host_once(output, "ghost", ["localhost"], "could not be reached")


def recap(output):
    """PLAY RECAP's counters per host: {host: {"ok": 3, "failed": 0, ...}}."""
    rows = re.findall(r"^(\S+)\s+:\s+((?:\w+=\d+\s*)+)$", output.split("PLAY RECAP", 1)[1], re.MULTILINE)
    return {host: {key: int(value) for key, value in re.findall(r"(\w+)=(\d+)", counters)} for host, counters in rows}


def assert_console_names_the_unreachable_host_once(output, host, healthy_hosts, reason_part):
    """The host not reached is one warning line with its reason while the run goes on, no result dumped as JSON; the
    recap fails that host, never the controller or a healthy host for it."""
    lines = [line for line in output.splitlines() if line.startswith("[WARNING]: %s: not reached (probe " % host)]
    assert len(lines) == 1, output
    assert reason_part in lines[0] and "ansible -m ansible.builtin.ping %s" % host in lines[0]
    assert ") => {" not in output and '"envelope"' not in output, output
    assert "UNREACHABLE!" not in output and "\\x0a" not in output, output
    counters = recap(output)
    assert counters[host]["failed"] == 1, counters
    for name in healthy_hosts + ["localhost"]:
        assert counters.get(name, {}).get("failed", 0) == 0, counters


@pytest.mark.skipif(shutil.which("sh") is None, reason="needs sh for the shims")
def test_the_readme_inventory_runs_where_python3_on_path_is_a_broken_pyenv_shim(tmp_path):
    # README.md's "Pointing it at a fleet" localhost entry as written (connection local, no interpreter), on a machine
    # whose python3 (and python3.N, which interpreter discovery tries first) is a pyenv shim for a missing version.
    shims = tmp_path / "shims"
    shims.mkdir()
    for name in ["python", "python3"] + ["python3.%d" % minor for minor in range(6, 16)]:
        shim = shims / name
        shim.write_text("#!/bin/sh\necho 'pyenv: %s: command not found' >&2\necho >&2\n"
                        "echo \"The \\`%s' command exists in these Python versions:\" >&2\nexit 127\n" % (name, name))
        shim.chmod(0o755)
    inventory = tmp_path / "inventory.yml"
    inventory.write_text("all:\n  hosts:\n    localhost:\n      ansible_connection: local\n")
    env = dict(os.environ, PATH="%s:%s" % (shims, os.environ["PATH"]))
    code, output = run_playbook(tmp_path / "results", "-i", str(inventory), "-e", "gpufleet_profile=health",
                                "-e", json.dumps({"probe_params": {"health": {"cuda_init": False}}}), *REPORT_ONLY, env=env)
    assert code == 0, output
    run_dir = only_run_dir(tmp_path / "results")
    with open(os.path.join(run_dir, "localhost", "health.json")) as handle:
        health = json.load(handle)
    assert health["status"] in ("ok", "partial", "unavailable"), health["reason"]
    with open(os.path.join(run_dir, "fleet.json")) as handle:
        assert json.load(handle)["hosts"]["localhost"]["verdict"] == "not_validated"  # judged, as any GPU-less host
    assert "pyenv" not in output and "\\x0a" not in output, output


def test_an_unknown_profile_is_refused_before_anything_runs(tmp_path):
    code, output = run_playbook(tmp_path, "-e", "gpufleet_profile=bogus")
    assert code != 0
    assert "bogus" in output and "quick" in output
    assert not list(every_result_file(tmp_path))


def test_the_built_collection_installs_and_runs_the_same_playbook(tmp_path):
    build = subprocess.run([ANSIBLE_GALAXY, "collection", "build", "--output-path", str(tmp_path), ROOT],
                           capture_output=True, text=True, timeout=300, check=False)
    assert build.returncode == 0, build.stdout + build.stderr
    tarball = tmp_path / "gpufleet-validation-0.1.0.tar.gz"
    assert tarball.exists()
    install = subprocess.run([ANSIBLE_GALAXY, "collection", "install", "-p", str(tmp_path / "collections"),
                              str(tarball)], capture_output=True, text=True, timeout=300, cwd=str(tmp_path), check=False)
    assert install.returncode == 0, install.stdout + install.stderr
    installed = tmp_path / "collections" / "ansible_collections" / "gpufleet" / "validation"
    assert (installed / "probes" / "health.py").exists()
    assert not (installed / "collections").exists()
    (tmp_path / "ansible.cfg").write_text("[defaults]\n")
    env = dict(os.environ, ANSIBLE_COLLECTIONS_PATH=str(tmp_path / "collections"),
               ANSIBLE_CONFIG=str(tmp_path / "ansible.cfg"))
    code, output = run_playbook(
        tmp_path / "results", "-i", "localhost,", "-e", "ansible_connection=local",
        "-e", "ansible_python_interpreter=%s" % sys.executable, *REPORT_ONLY,
        playbook="gpufleet.validation.validate", cwd=str(tmp_path), env=env)
    assert code == 0, output
    run_dir = only_run_dir(tmp_path / "results")
    with open(os.path.join(run_dir, "localhost", "health.json")) as handle:
        health = json.load(handle)
    assert_schema_valid(health)
    assert health["collection_version"] == "0.1.0"
    assert os.path.exists(os.path.join(run_dir, "localhost", "dossier.html"))


def test_ansible_doc_shows_the_probe_module_options():
    completed = subprocess.run([os.path.join(BIN, "ansible-doc"), "gpufleet.validation.probe"], cwd=ROOT,
                               capture_output=True, text=True, timeout=120, check=False)
    assert completed.returncode == 0, completed.stderr
    text = re.sub(r"\x1b\[[0-9;]*m", "", completed.stdout)
    options = set(re.findall(r"^ {3}(\w+) ", text, re.MULTILINE))
    assert {"name", "python", "timeout", "params", "results_dir", "run_id", "progress_interval"} <= options
    assert "Check mode runs nothing" in " ".join(text.split())
