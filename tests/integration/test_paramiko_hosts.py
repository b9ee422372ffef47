"""The real `ansible-playbook validate.yml` over ansible_connection=paramiko against the SSH test fleet (network
namespaces with their own sshd, tests/fleet/netns_fleet.py), with host-key checking on, beside the same run over ssh.

paramiko reads host keys only from ~/.ssh/known_hosts and /etc/ssh/ssh_known_hosts (it ignores ansible_ssh_common_args),
so these runs get the fleet's paramiko home as HOME (Fleet.paramiko_env()); the real user's ~/.ssh is neither read for
the fleet's keys nor written. docs/connections.md says which connection to use and what these tests measured.

A controller without paramiko (a shim package first on PYTHONPATH that raises ImportError, so ansible-core sees it as
not installed): every host is reported unreachable with a reason that says so and names requirements-paramiko.txt,
once per host, and the report is written.
"""
import importlib.util
import json
import os
import re
import subprocess
import sys
import time

import pytest

FLEET_DIR = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "fleet")
if FLEET_DIR not in sys.path:
    sys.path.insert(0, FLEET_DIR)

from faults import runs  # noqa: E402  pylint: disable=wrong-import-position

# The health probe alone, without CUDA initialisation in a fresh process (torch has no CUDA here), as the other fleet
# tests run it (tests/integration/test_store_host_side.py); report only (gpufleet_gate: false), as they do: the gate
# refuses every host of a CPU machine (issue 44), and these tests are about the connection.
HEALTH = ("-e", json.dumps({"gpufleet_profile": "health", "probe_params": {"health": {"cuda_init": False}}, "gpufleet_gate": False}))
NOT_INSTALLED = "paramiko is not installed"
DEPRECATED = "The paramiko connection plugin is deprecated"
REPORT_FILES = ("fleet.json", "index.html", "index.md", "junit.xml", "gpufleet.prom")


def _needs_paramiko():
    """requirements-dev.txt installs paramiko, so its absence is a broken test environment, not a reason to skip."""
    if importlib.util.find_spec("paramiko") is None:
        pytest.fail("paramiko is not installed on this controller: .venv-test/bin/python -m pip install -r "
                    "requirements-paramiko.txt (requirements-dev.txt includes it)", pytrace=False)


def _run(inventory, results, *extra, env=None):
    """(exit code, output, wall seconds) of the playbook run to its end."""
    argv = [runs.ANSIBLE_PLAYBOOK, "validate.yml", "-i", inventory, "-e", "gpufleet_results_dir=%s" % results]
    started = time.monotonic()
    completed = subprocess.run(argv + list(extra), cwd=runs.ROOT, capture_output=True, text=True, env=env,
                               timeout=runs.PLAYBOOK_TIMEOUT_S, check=False)
    return completed.returncode, completed.stdout + completed.stderr, time.monotonic() - started


def _key_paths(value, prefix=""):
    """Every key path in value ('a.b', 'a.list[].c'): the shape of a probe's data, not its values."""
    paths = set()
    if isinstance(value, dict):
        for key, item in value.items():
            path = "%s.%s" % (prefix, key) if prefix else key
            paths.add(path)
            paths |= _key_paths(item, path)
    elif isinstance(value, list):
        for item in value:
            paths |= _key_paths(item, prefix + "[]")
    return paths


def _what_the_run_left(run_dir, hosts):
    """{relative path of every file}, {host: {probe: (status, key paths of data)}}, {host: verdict}."""
    files = {os.path.relpath(path, run_dir) for path in runs.every_file(run_dir)}
    results = {}
    for host in hosts:
        results[host] = {}
        for name in sorted(os.listdir(os.path.join(run_dir, host))):
            if name.endswith(".json") and name not in runs.STORE_FILES:
                envelope = runs.envelope_of(run_dir, host, name[:-len(".json")])  # schema-valid, data too
                results[host][envelope["probe"]] = (envelope["status"], _key_paths(envelope["data"]))
    verdicts = {host: runs.fleet_host(run_dir, host)["verdict"] for host in hosts}
    return files, results, verdicts


def _digest(path):
    try:
        with open(path, "rb") as handle:
            return handle.read()
    except FileNotFoundError:
        return None


def _recap(output, host):
    """The host's PLAY RECAP counts: {"ok": 2, "unreachable": 0, ...}."""
    match = re.search(r"^%s\s+:\s+(.*)$" % re.escape(host), output.split("PLAY RECAP")[-1], re.MULTILINE)
    assert match, "no PLAY RECAP line for %s" % host
    return {key: int(count) for key, count in re.findall(r"(\w+)=(\d+)", match.group(1))}


def test_paramiko_validates_the_fleet_as_ssh_does(netns_fleet, tmp_path):
    _needs_paramiko()
    fleet = netns_fleet(hosts=2, prefix="pmkcmp")
    real_known_hosts = os.path.expanduser("~/.ssh/known_hosts")
    real_before = _digest(real_known_hosts)
    paramiko_before = _digest(fleet.paramiko_known_hosts_path)

    ssh_code, ssh_output, ssh_wall_s = _run(fleet.inventory_path, tmp_path / "ssh", *HEALTH)
    paramiko_code, paramiko_output, paramiko_wall_s = _run(fleet.paramiko_inventory_path, tmp_path / "paramiko",
                                                           *HEALTH, env=fleet.paramiko_env())
    print("health profile, 2 hosts: ssh %.1f s, paramiko %.1f s" % (ssh_wall_s, paramiko_wall_s))

    assert ssh_code == 0, ssh_output
    assert paramiko_code == ssh_code, paramiko_output
    assert DEPRECATED in paramiko_output  # it really went over paramiko
    assert DEPRECATED not in ssh_output
    ssh_run, paramiko_run = runs.only_run_dir(tmp_path / "ssh"), runs.only_run_dir(tmp_path / "paramiko")
    ssh_files, ssh_results, ssh_verdicts = _what_the_run_left(ssh_run, fleet.names)
    paramiko_files, paramiko_results, paramiko_verdicts = _what_the_run_left(paramiko_run, fleet.names)
    assert paramiko_files == ssh_files
    assert set(REPORT_FILES) <= paramiko_files
    for host in fleet.names:
        assert {"%s/health.json" % host, "%s/dossier.html" % host} <= paramiko_files
    assert paramiko_results == ssh_results
    assert paramiko_verdicts == ssh_verdicts
    for host in fleet.names:
        runs.assert_validated(paramiko_run, host, probes=("health",))
        assert _recap(paramiko_output, host) == _recap(ssh_output, host)
        assert _recap(paramiko_output, host)["unreachable"] == 0
    assert "fleet index: %s" % os.path.join(paramiko_run, "index.html") in paramiko_output

    # Host keys were checked against the fleet's file and nothing was written anywhere.
    assert _digest(fleet.paramiko_known_hosts_path) == paramiko_before
    assert os.listdir(os.path.dirname(fleet.paramiko_known_hosts_path)) == ["known_hosts"]
    assert _digest(real_known_hosts) == real_before


def test_paramiko_refuses_a_host_whose_key_does_not_match(netns_fleet, tmp_path):
    _needs_paramiko()
    fleet = netns_fleet(hosts=2, prefix="pmkkey")
    good, victim = fleet.names
    with open(fleet.paramiko_known_hosts_path) as handle:
        lines = handle.read().splitlines()
    # The victim's address with the other host's key: what a re-imaged (or impostor) host looks like.
    lines[1] = " ".join([lines[1].split()[0]] + lines[0].split()[1:])
    with open(fleet.paramiko_known_hosts_path, "w") as handle:
        handle.write("\n".join(lines) + "\n")
    code, output, unused_wall_s = _run(fleet.paramiko_inventory_path, tmp_path / "results", *HEALTH,
                                       env=fleet.paramiko_env())
    assert code == 2, output
    assert "1 host(s) could not be validated because they were not reached: %s." % victim in output
    run_dir = runs.only_run_dir(tmp_path / "results")
    runs.assert_validated(run_dir, good, probes=("health",))
    envelope = runs.envelope_of(run_dir, victim, "health")
    assert envelope["status"] == "unreachable"
    assert "host key mismatch for %s" % fleet.host(victim)["address"] in envelope["reason"], envelope["reason"]
    runs.assert_reported_as(run_dir, victim, "unreachable", "host key mismatch")
    with open(fleet.paramiko_known_hosts_path) as handle:
        assert handle.read().splitlines() == lines  # not "corrected" by recording the host's key


def _where_it_is_said(output, hosts, text):
    """{host: {"probe": [probe, ...], "loop summary": [line], "verdict": [line]}} for the output's lines that hold
    text; a line that holds it and is none of these (a warning per task or per connection attempt) fails the test."""
    said = {host: {"probe": [], "loop summary": [], "verdict": []} for host in hosts}
    for line in output.splitlines():
        if text not in line:
            continue
        for host in hosts:
            probe = re.match(r"^\[WARNING\]: %s: not reached \(probe (\w+)\): " % re.escape(host), line)
            if probe:
                said[host]["probe"].append(probe.group(1))
                break
            if re.match(r"^fatal: \[%s\]: UNREACHABLE! => \{" % re.escape(host), line):
                said[host]["loop summary"].append(line)
                break
            if re.match(r'^\s*"%s: unreachable - ' % re.escape(host), line):
                said[host]["verdict"].append(line)
                break
        else:
            raise AssertionError("%r is said where no host's probe result or verdict is: %s" % (text, line[:500]))
    return said


def test_a_controller_without_paramiko_reports_every_host_unreachable_and_says_why_once(netns_fleet, tmp_path):
    fleet = netns_fleet(hosts=2, prefix="pmknone")
    shim = tmp_path / "no-paramiko" / "paramiko"
    shim.mkdir(parents=True)
    (shim / "__init__.py").write_text("raise ImportError(\"No module named 'paramiko' (a test shim in %s hides it)\")\n"
                                      % shim)
    env = fleet.paramiko_env()
    env["PYTHONPATH"] = os.pathsep.join([str(shim.parent)] + [p for p in [os.environ.get("PYTHONPATH")] if p])
    # Two probes (health, then membw on a 16 MiB buffer), so that a message repeated per probe would show.
    code, output, unused_wall_s = _run(fleet.paramiko_inventory_path, tmp_path / "results", *runs.QUICK, env=env)

    assert code == 2, output  # docs/reports.md: 2 when a host could not be reached
    assert "%d host(s) could not be validated because they were not reached: %s." % (
        len(fleet.names), ", ".join(fleet.names)) in output
    run_dir = runs.only_run_dir(tmp_path / "results")
    runs.assert_every_file_complete(run_dir)
    for name in REPORT_FILES:
        assert os.path.getsize(os.path.join(run_dir, name)) > 0, name
    said = _where_it_is_said(output, fleet.names, NOT_INSTALLED)  # stdout, then stderr (its warnings)
    for host in fleet.names:
        envelope = runs.envelope_of(run_dir, host, "health")
        assert envelope["status"] == "unreachable", envelope
        assert NOT_INSTALLED in envelope["reason"] and "requirements-paramiko.txt" in envelope["reason"], envelope
        # Its remaining probes were not attempted (README: unreachable), so they say nothing more.
        assert not os.path.exists(os.path.join(run_dir, host, "membw.json"))
        runs.assert_reported_as(run_dir, host, "unreachable", NOT_INSTALLED)
        assert os.path.getsize(os.path.join(run_dir, host, "dossier.html")) > 0
        # Said about the host once by the probes (the first probe's result; nothing for membw), once in Ansible's
        # summary of the task's loop at most, once in the report's verdicts.
        assert said[host]["probe"] == ["health"], (host, said[host])
        assert len(said[host]["loop summary"]) <= 1, (host, said[host])
        assert len(said[host]["verdict"]) == 1, (host, said[host])
