"""Probes that misbehave on one host of a test fleet, with the real `ansible-playbook validate.yml` over SSH, then the
reports read back.

The faulty host's gpufleet_python is an interpreter from tests/fleet/faults/faulty_python.py that misbehaves when the
engine runs the health probe with it (and runs every other probe for real), or a path where no interpreter is: a probe
that hangs (killed at its timeout with its whole process group), crashes (killed by a signal), prints garbage, writes
a result that breaks its schema, and a missing interpreter. For each: the other host is validated in full, the faulty
host's probe result says what happened with a reason a person can act on (and keeps what the probe wrote in
<probe>.raw), the fleet report gives the host the verdict error with that reason, the faulty host's next probe still
runs, and the run exits 0 with a line per host that did not pass (a report-only run, gpufleet_gate: false, as
runs.QUICK asks: a CPU host proves no headline, issue 44; docs/reports.md).
"""
import json
import os
import sys

FAULTS_DIR = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "fleet")
if FAULTS_DIR not in sys.path:
    sys.path.insert(0, FAULTS_DIR)

from faults import faulty_python, runs  # noqa: E402  pylint: disable=wrong-import-position

HANG_TIMEOUT_S = 8
KILL_GRACE_S = 5  # plugins/module_utils/probe_process.py: SIGTERM, then SIGKILL this much later


def run_with_fault(netns_fleet, tmp_path, prefix, faults, extra_vars=None, hosts=2):
    """A fleet whose last hosts get the interpreters in faults ({fault or 'missing': ...}); run the playbook to its end."""
    fleet = netns_fleet(hosts=hosts, prefix=prefix)
    host_vars = {}
    for name, fault in zip(fleet.names[hosts - len(faults):], faults):
        python = (faulty_python.missing_interpreter(tmp_path) if fault == "missing"
                  else faulty_python.make_interpreter(tmp_path / "python", fault))
        host_vars[name] = dict(extra_vars or {}, gpufleet_python=python)
    results = tmp_path / "results"
    code, output = runs.run_validate(fleet, results, *runs.QUICK, host_vars=host_vars)
    run_dir = runs.only_run_dir(results)
    runs.assert_every_file_complete(run_dir)
    return fleet, run_dir, code, output


def assert_faulty_host_reported(run_dir, output, host, status, reason_part, probe="health"):
    """The probe's result has the status and reason; the host's verdict is error with that reason, in fleet.json,
    index.md and the run's summary; its next probe ran for real."""
    envelope = runs.envelope_of(run_dir, host, probe)
    assert envelope["status"] == status, envelope
    assert reason_part in envelope["reason"], envelope["reason"]
    runs.assert_reported_as(run_dir, host, "error", "the %s probe ended with status %s: %s" % (probe, status, reason_part))
    # The verdict is said once, in the run's summary, not also as a warning.
    assert output.count("%s: error - health.probe_status: the health probe ended with status %s" % (host, status)) == 1, output
    assert os.path.getsize(os.path.join(run_dir, host, "dossier.html")) > 0
    return envelope


def test_a_hanging_probe_is_killed_at_its_timeout_with_its_whole_process_group(netns_fleet, tmp_path):
    fleet = netns_fleet(hosts=2, prefix="fxhang")
    good, victim = fleet.names
    python = faulty_python.make_interpreter(tmp_path / "python", "hang")
    host_vars = {victim: {"gpufleet_python": python, "probe_timeouts": {"health": HANG_TIMEOUT_S}}}
    results = tmp_path / "results"
    run = runs.BackgroundRun(runs.validate_argv(fleet, results, *runs.QUICK, host_vars=host_vars), tmp_path / "run.log")
    try:
        pids = runs.wait_for(lambda: faulty_python.hang_pids(tmp_path / "python"), "the hanging probe's pids", run=run)
        namespace = fleet.host(victim)["namespace"]
        assert set(pids) <= set(fleet.processes_in(namespace)), "the probe and its child run on the victim"
        assert runs.host_processes(fleet, victim, faulty_python.HANG_CHILD_MARKER)
        code, output = run.wait()
    finally:
        run.kill()
    assert code == 0, output
    run_dir = runs.only_run_dir(results)
    runs.assert_every_file_complete(run_dir)
    runs.assert_validated(run_dir, good)
    envelope = assert_faulty_host_reported(run_dir, output, victim, "timeout",
                                           "the probe did not finish within its %d s limit and its whole process group "
                                           "was killed" % HANG_TIMEOUT_S)
    assert "raise the limit (probe_timeouts: {health: seconds}) if the host is merely slow" in envelope["reason"]
    # killed near its limit, not at the async wrapper's (limit + 120 s); the margin absorbs a loaded CI machine
    assert HANG_TIMEOUT_S <= envelope["duration_s"] < HANG_TIMEOUT_S + KILL_GRACE_S + 30, envelope["duration_s"]
    assert "probe health still running" in output and "(limit %d s)" % HANG_TIMEOUT_S in output
    # The probe and its child (which ignores SIGTERM) are gone from the host, and nothing of the probe is left there.
    assert not [pid for pid in pids if runs.alive(pid)], pids
    assert not runs.host_processes(fleet, victim, faulty_python.HANG_CHILD_MARKER)
    assert not runs.host_processes(fleet, victim, "gpufleet-probe")
    assert runs.envelope_of(run_dir, victim, "membw")["status"] == "ok"  # the host's next probe ran


def test_a_probe_killed_by_a_signal_is_an_error_naming_the_signal(netns_fleet, tmp_path):
    fleet, run_dir, code, output = run_with_fault(netns_fleet, tmp_path, "fxcrash", ["crash"])
    good, victim = fleet.names
    assert code == 0, output
    runs.assert_validated(run_dir, good)
    envelope = assert_faulty_host_reported(run_dir, output, victim, "error", "the probe was killed by SIGSEGV (signal 11)")
    assert faulty_python.CRASH_STDERR in envelope["reason"]  # the last thing it said
    assert not os.path.exists(os.path.join(run_dir, victim, "health.raw"))  # it wrote nothing to keep
    assert runs.envelope_of(run_dir, victim, "membw")["status"] == "ok"


def test_a_probe_that_prints_garbage_is_an_error_and_what_it_wrote_is_kept(netns_fleet, tmp_path):
    fleet, run_dir, code, output = run_with_fault(netns_fleet, tmp_path, "fxjunk", ["garbage", "garbage_file"], hosts=3)
    good, on_stdout, in_file = fleet.names
    assert code == 0, output
    runs.assert_validated(run_dir, good)
    # Garbage on stdout and no result file: the reason says so, and what it printed is kept in health.raw.
    envelope = assert_faulty_host_reported(run_dir, output, on_stdout, "error", "the probe exited with code 0 but wrote no result file")
    assert "what it printed on stdout is kept beside the result (.raw)" in envelope["reason"]
    with open(os.path.join(run_dir, on_stdout, "health.raw"), encoding="utf-8", newline="") as handle:
        assert handle.read() == faulty_python.GARBAGE.decode("utf-8", "backslashreplace")
    # Garbage in the result file: not JSON, the bytes kept.
    envelope = assert_faulty_host_reported(run_dir, output, in_file, "error", "the probe's result file is not valid JSON")
    assert "the raw output is kept beside the result" in envelope["reason"]
    with open(os.path.join(run_dir, in_file, "health.raw"), encoding="utf-8", newline="") as handle:
        assert handle.read() == faulty_python.GARBAGE_FILE_TEXT
    for name in (on_stdout, in_file):
        assert runs.envelope_of(run_dir, name, "membw")["status"] == "ok"


def test_duplicate_keys_and_deep_nesting_are_an_error_in_one_line_and_the_output_is_kept(netns_fleet, tmp_path):
    """Issue 32: "status" error then ok was stored as ok (the host passed); 200,000 levels were a RecursionError traceback."""
    fleet, run_dir, code, output = run_with_fault(netns_fleet, tmp_path, "fxdup", ["duplicate_keys", "deep"], hosts=3)
    good, duplicated, deep = fleet.names
    assert code == 0, output
    runs.assert_validated(run_dir, good)
    envelope = assert_faulty_host_reported(run_dir, output, duplicated, "error",
                                           "the probe's result file is not valid JSON (the key \"status\" appears twice in one object")
    with open(os.path.join(run_dir, duplicated, "health.raw"), encoding="utf-8") as handle:
        kept = handle.read()
    # Read the old way, the probe's own status (the last key) would have been taken, as it was before issue 32.
    assert kept.startswith('{"status": "error", ') and json.loads(kept)["status"] != "error", kept[:200]
    envelope = assert_faulty_host_reported(run_dir, output, deep, "error",
                                           "the probe's result file is not valid JSON (it is nested deeper than 64 levels")
    assert "Traceback" not in envelope["reason"] and "\n" not in envelope["reason"]
    assert os.path.getsize(os.path.join(run_dir, deep, "health.raw")) > 0
    for name in (duplicated, deep):
        assert runs.envelope_of(run_dir, name, "membw")["status"] == "ok"


def test_a_result_replayed_from_another_host_s_earlier_run_is_not_stored_as_this_host_s(netns_fleet, tmp_path):
    """Issue 45: a new host's probe wrote another host's stored result of an earlier run, byte for byte; the engine
    overwrote its host and run id without a word and the host passed. The result carries no nonce of this start: it
    is an error saying what it claimed, and what it wrote is kept beside it."""
    fleet, run_dir, code, output = run_with_fault(netns_fleet, tmp_path, "fxrep", ["replayed"])
    good, victim = fleet.names
    assert code == 0, output  # the quick profile reports only (gpufleet_gate false in runs.QUICK)
    runs.assert_validated(run_dir, good)
    envelope = assert_faulty_host_reported(run_dir, output, victim, "error",
                                           "the result does not answer this start of the probe (it carries no nonce): "
                                           "it claims host \"localhost\", started \"2026-11-30T02:53:48+00:00\"")
    assert "nonce" in envelope and envelope["nonce"] != runs.envelope_of(run_dir, good, "health")["nonce"]
    with open(faulty_python.RECORDED_HEALTH, encoding="utf-8") as recorded, \
            open(os.path.join(run_dir, victim, "health.raw"), encoding="utf-8") as kept:
        assert json.load(kept) == json.load(recorded)
    assert runs.envelope_of(run_dir, victim, "membw")["status"] == "ok"


def test_a_result_that_breaks_its_schema_is_not_trusted_and_is_kept(netns_fleet, tmp_path):
    fleet, run_dir, code, output = run_with_fault(netns_fleet, tmp_path, "fxschema", ["schema"])
    good, victim = fleet.names
    assert code == 0, output
    runs.assert_validated(run_dir, good)
    envelope = assert_faulty_host_reported(run_dir, output, victim, "error", "the probe's result breaks its schema, so it is not trusted")
    assert "at data: 'software' is a required property" in envelope["reason"]
    assert any(problem.startswith("at data.platform:") for problem in envelope["data"]["schema_problems"]), envelope["data"]
    rejected = runs.load_json(os.path.join(run_dir, victim, "health.raw"))
    assert rejected["status"] == "ok" and rejected["data"] == faulty_python.SCHEMA_BREAKING_DATA
    assert runs.envelope_of(run_dir, victim, "membw")["status"] == "ok"


def test_a_missing_interpreter_on_one_host_is_an_error_naming_the_variable_to_set(netns_fleet, tmp_path):
    fleet, run_dir, code, output = run_with_fault(netns_fleet, tmp_path, "fxnopy", ["missing"])
    good, victim = fleet.names
    assert code == 0, output
    runs.assert_validated(run_dir, good)
    missing = faulty_python.missing_interpreter(tmp_path)
    for probe in ("health", "membw"):
        envelope = runs.envelope_of(run_dir, victim, probe)
        assert envelope["status"] == "error", envelope
        assert "the interpreter %r does not exist on this host; set gpufleet_python" % missing in envelope["reason"]
    runs.assert_reported_as(run_dir, victim, "error", "the interpreter %r does not exist on this host" % missing)


def test_hosts_that_report_the_same_gpus_are_flagged_and_none_of_them_passes(netns_fleet, tmp_path):
    """Three hosts whose health results carry the same GPU UUIDs and serials (aliases of one machine, or a copied
    result): each is failed by fleet.same_gpus naming the others, in fleet.json, the index and the run's summary."""
    fleet, run_dir, code, output = run_with_fault(
        netns_fleet, tmp_path, "fxsame", ["recorded_gpus"] * 3, hosts=4,
        extra_vars={"gpufleet_rule_overrides": {"health.gpu_count": {"params": {"expected": 2}}}})
    own, aliases = fleet.names[0], sorted(fleet.names[1:])
    assert code == 0, output
    runs.assert_validated(run_dir, own)
    assert "fleet.same_gpus" not in str(runs.fleet_host(run_dir, own)["reasons"])
    for host in aliases:
        entry = runs.assert_reported_as(run_dir, host, "fail", "these hosts report the same GPUs: an inventory alias or a copied "
                                        "result: %s share uuid GPU-" % ", ".join(aliases))
        assert entry["reasons"][0].startswith("fleet.same_gpus: "), entry["reasons"]
        assert "%s: fail - fleet.same_gpus: these hosts report the same GPUs" % host in output, output
