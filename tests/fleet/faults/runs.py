"""Run the real `ansible-playbook validate.yml` against a test fleet and read what it left behind.

Used by the fault tests (tests/integration/test_faults_*.py). Only argv-list subprocesses, no shell.
"""
from __future__ import annotations

import hashlib
import json
import os
import re
import signal
import subprocess
import sys
import time

from ansible_collections.gpufleet.validation.plugins.plugin_utils.store.schemas import schema_validator
from ansible_collections.gpufleet.validation.plugins.plugin_utils.store.run_order import stored_run_ids

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
ANSIBLE_PLAYBOOK = os.path.join(os.path.dirname(sys.executable), "ansible-playbook")
PLAYBOOK_TIMEOUT_S = 600
# Good hosts on this CPU-only machine: health is unavailable with its reason (no NVML, no CUDA build of torch), or ok
# on a machine that has them; the measurement probes run on the CPU and are ok.
GOOD_STATUSES = {"health": ("ok", "partial", "unavailable"), "membw": ("ok",)}
# A good host of these runs is not validated, and only for want of proofs (issue 44): health runs without its CUDA
# initialisation, so health.cuda_init is never proven, and membw on the CPU proves no GPU's bandwidth. A fault that
# reached the host would make it fail, err or be unreachable instead.
GOOD_VERDICTS = ("not_validated",)
# The store's own records (docs/store.md), not probe results.
STORE_FILES = ("run.json", "writer.json", "inputs.json")
# The report's per-host outcomes (<run>/outcomes/<host>.json, docs/acting.md): not probe results.
OUTCOMES_DIR = "outcomes"


def is_probe_result(path, run_dir) -> bool:
    """Whether path is a probe's result file in a host's directory of the run."""
    parts = os.path.relpath(str(path), str(run_dir)).split(os.sep)
    return len(parts) == 2 and parts[0] != OUTCOMES_DIR and parts[1].endswith(".json") and parts[1] not in STORE_FILES


# A profile of its own, health then membw (what the fault tests stop, kill and count), rather than quick, whose probes
# change as probes join it (fabric did): health without its CUDA initialisation in a fresh process (torch has no CUDA
# here), membw on a 16 MiB buffer, so that a fault test spends its time on the fault. Report only (gpufleet_gate:
# false): every profile gates (issue 44) and these runs prove no headline on a CPU host, so the exit code would say that
# and not the fault; a host not reached still fails the run (exit 2).
HEALTH_THEN_MEMBW = {"gpufleet_profiles": {"health_then_membw": ["health", "membw"]}, "gpufleet_profile": "health_then_membw",
                     "gpufleet_gate": False}
QUICK = ("-e", json.dumps(dict(HEALTH_THEN_MEMBW, probe_params={"health": {"cuda_init": False}, "membw": {"sizes_mib": [16]}})))
# The same with membw slow enough that a run can be killed or interrupted while it runs, after health is stored.
SLOW_MEMBW = ("-e", json.dumps(dict(HEALTH_THEN_MEMBW, probe_params={"health": {"cuda_init": False},
                                                                     "membw": {"sizes_mib": [16, 64, 256]}})))


def write_host_vars(fleet, host_vars: dict) -> str:
    """A second inventory source beside the fleet's: variables for some of its hosts (JSON is YAML)."""
    path = os.path.join(fleet.directory, "fault_host_vars.yml")
    with open(path, "w") as handle:
        json.dump({"all": {"hosts": host_vars}}, handle, indent=2)
    return path


def validate_argv(fleet, results_dir, *extra, host_vars=None, run_id=None) -> list:
    argv = [ANSIBLE_PLAYBOOK, "validate.yml", "-i", fleet.inventory_path]
    if host_vars:
        argv += ["-i", write_host_vars(fleet, host_vars)]
    argv += ["-e", "gpufleet_results_dir=%s" % results_dir]
    if run_id:
        argv += ["-e", "gpufleet_run_id=%s" % run_id]
    return argv + list(extra)


def run_validate(fleet, results_dir, *extra, host_vars=None, run_id=None):
    """Run the playbook to its end; (exit code, stdout + stderr)."""
    completed = subprocess.run(validate_argv(fleet, results_dir, *extra, host_vars=host_vars, run_id=run_id), cwd=ROOT,
                               capture_output=True, text=True, timeout=PLAYBOOK_TIMEOUT_S, check=False)
    return completed.returncode, completed.stdout + completed.stderr


class BackgroundRun:
    """The playbook in the background, in its own session (so a signal to its process group is a Ctrl-C)."""

    def __init__(self, argv, log_path):
        self.log_path = str(log_path)
        with open(self.log_path, "wb") as log:
            self.process = subprocess.Popen(argv, cwd=ROOT, stdin=subprocess.DEVNULL, stdout=log,  # pylint: disable=consider-using-with
                                            stderr=subprocess.STDOUT, start_new_session=True)

    def output(self) -> str:
        with open(self.log_path, encoding="utf-8", errors="replace") as handle:
            return handle.read()

    def running(self) -> bool:
        return self.process.poll() is None

    def signal_group(self, sig: int) -> None:
        os.killpg(self.process.pid, sig)

    def wait(self, timeout_s: float = PLAYBOOK_TIMEOUT_S):
        """(exit code, output) once it has ended."""
        code = self.process.wait(timeout=timeout_s)
        return code, self.output()

    def kill(self) -> None:
        """Make sure nothing of it is left (for a finally:)."""
        if self.running():
            try:
                os.killpg(self.process.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            self.process.wait(timeout=30)


def wait_for(predicate, what: str, timeout_s: float = 120.0, run: BackgroundRun | None = None):
    """Poll predicate() until it returns something true; fail with ``what`` (and the run's output) on timeout."""
    deadline = time.monotonic() + timeout_s
    while True:
        value = predicate()
        if value:
            return value
        if run is not None and not run.running():
            raise AssertionError("the run ended before %s:\n%s" % (what, run.output()[-4000:]))
        if time.monotonic() >= deadline:
            raise AssertionError("%s did not happen within %.0f s%s" % (what, timeout_s, ":\n" + run.output()[-4000:] if run else ""))
        time.sleep(0.1)


# ----- what a run left -----

def run_dirs(results_dir) -> list:
    if not os.path.isdir(str(results_dir)):
        return []
    return sorted(stored_run_ids(str(results_dir)))  # the run index and the history page beside the runs are no runs


def only_run_dir(results_dir) -> str:
    runs = run_dirs(results_dir)
    assert len(runs) == 1, runs
    return os.path.join(str(results_dir), runs[0])


def load_json(path):
    with open(path) as handle:
        return json.load(handle)


def every_file(folder) -> list:
    found = []
    for parent, unused_dirs, names in os.walk(str(folder)):
        found += [os.path.join(parent, name) for name in names]
    return sorted(found)


def assert_every_file_complete(run_dir) -> None:
    """No temporary file of an atomic write is left, and every JSON file parses."""
    for path in every_file(run_dir):
        assert not os.path.basename(path).startswith(".tmp-"), "a temporary file was left: %s" % path
        if path.endswith(".json"):
            load_json(path)


def tree_digest(folder) -> dict:
    """{relative path: sha256} of every file under folder."""
    digest = {}
    for path in every_file(folder):
        with open(path, "rb") as handle:
            digest[os.path.relpath(path, str(folder))] = hashlib.sha256(handle.read()).hexdigest()
    return digest


def assert_schema_valid(envelope: dict) -> None:
    """The envelope against its schema, and its data against the probe's when the probe vouched for it."""
    schema_validator("envelope.schema.json").validate(envelope)
    if envelope["status"] in ("ok", "partial") or (envelope["status"] == "unavailable" and envelope["data"]):
        schema_validator(envelope["probe"] + ".schema.json").validate(envelope["data"])


def envelope_of(run_dir, host: str, probe: str) -> dict:
    envelope = load_json(os.path.join(str(run_dir), host, probe + ".json"))
    assert_schema_valid(envelope)
    assert envelope["host"] == host and envelope["probe"] == probe
    assert envelope["run_id"] == os.path.basename(str(run_dir))
    return envelope


def fleet_host(run_dir, host: str) -> dict:
    return load_json(os.path.join(str(run_dir), "fleet.json"))["hosts"][host]


def index_row(run_dir, host: str) -> str:
    """The host's row of index.md's host table ("Hosts, worst first", not "What to do"), Markdown escapes taken out."""
    with open(os.path.join(str(run_dir), "index.md")) as handle:
        text = handle.read()
    hosts_table = text.split("\n## Hosts, worst first\n", 1)[-1].split("\n## ", 1)[0]
    lines = [line for line in hosts_table.splitlines() if line.startswith("| [%s](" % host.replace("_", "\\_"))]
    assert len(lines) == 1, "no single row for %s in index.md: %s" % (host, lines)
    return re.sub(r"\\(.)", r"\1", lines[0])


def assert_validated(run_dir, host: str, probes=("health", "membw")) -> None:
    """The host ran in full: every probe's result schema-valid with a good status, the verdict of a good CPU host (not
    validated for want of proofs only: GOOD_VERDICTS), a dossier."""
    for probe in probes:
        envelope = envelope_of(run_dir, host, probe)
        assert envelope["status"] in GOOD_STATUSES[probe], (host, probe, envelope["status"], envelope["reason"])
        assert not os.path.exists(os.path.join(str(run_dir), host, probe + ".raw"))
    verdict = fleet_host(run_dir, host)
    assert verdict["verdict"] in GOOD_VERDICTS, (host, verdict["verdict"], verdict["reasons"])
    assert verdict["not_proven"] and not [check for check in verdict["checks"] if check["status"] in ("fail", "error")], (host, verdict)
    assert os.path.getsize(os.path.join(str(run_dir), host, "dossier.html")) > 0
    assert os.path.getsize(os.path.join(str(run_dir), host, "dossier.md")) > 0
    assert "| **%s** |" % verdict["verdict"] in index_row(run_dir, host) or "| %s |" % verdict["verdict"] in index_row(run_dir, host)


def assert_reported_as(run_dir, host: str, verdict: str, reason_part: str) -> dict:
    """fleet.json and index.md give the host this verdict and a reason that contains reason_part."""
    entry = fleet_host(run_dir, host)
    assert entry["verdict"] == verdict, (host, entry)
    assert any(reason_part in reason for reason in entry["reasons"]), (host, reason_part, entry["reasons"])
    row = index_row(run_dir, host)
    assert "**%s**" % verdict in row and reason_part in row, (host, row)
    return entry


# ----- processes on a host -----

def host_processes(fleet, name: str, needle: str) -> list:
    """PIDs of live processes in the host's network namespace whose command line contains needle."""
    found = []
    for pid in fleet.processes_in(fleet.host(name)["namespace"]):
        try:
            with open("/proc/%d/cmdline" % pid, "rb") as handle:
                cmdline = handle.read().replace(b"\0", b" ").decode("utf-8", "replace")
        except OSError:
            continue
        if needle in cmdline:
            found.append(pid)
    return found


def alive(pid: int) -> bool:
    """True while the process exists and is not a zombie."""
    try:
        with open("/proc/%d/stat" % pid) as handle:
            return handle.read().rsplit(")", 1)[1].split()[0] not in ("Z", "X")
    except (OSError, IndexError):
        return False
