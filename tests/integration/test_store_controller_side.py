"""The real `playbooks/report.yml` on prepared results: one bad input never takes the report down for everyone.

An earlier run's health.json that is garbage, truncated or breaks its schema is said on every drift check that needed it
(skip, with the reason); a baseline with .nan is refused naming the field and the healthy hosts of that SKU are not
failed; a YAML alias bomb in a baseline is refused at once; a host name with ESC/BEL bytes reaches no file raw.
"""
import json
import os
import re
import shutil
import signal
import subprocess
import time
import zlib

import pytest
import yaml
from test_validate_playbook import ANSIBLE_PLAYBOOK, ROOT  # pylint: disable=import-error

from ansible_collections.gpufleet.validation.plugins.module_utils.process_tree import descendants, process_table
from ansible_collections.gpufleet.validation.plugins.plugin_utils.store.paths import host_dir_name

HEALTH_OK = os.path.join(ROOT, "tests", "fixtures", "health_h200x2_ok_by_the_action.json")
PREVIOUS, CURRENT = "20261129T010000Z-000001", "20261130T010000Z-000002"
# The recorded host is a 2-GPU slice of an 8-GPU H200 board: its inventory says so.
RIG = {"health.gpu_count": {"params": {"expected": 2}}}
FLEET_OUTPUTS = ("index.html", "index.md", "fleet.json", "junit.xml", "gpufleet.prom")
CONTROL_HOST = "evil\x1b[31m\x07node"
RAW_CONTROL = re.compile(b"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]|\xc2[\x80-\x9f]")
# A valid baseline whose notes hold nine levels of ten aliases (10**9 strings once expanded), 2 KB of aliases on the
# shipped file (3.5 KB since its datasheet values cite their sources): before aliases were refused, the schema's
# message about one note built its repr (152 s and 5.9 GB on a 4 KB file).
with open(os.path.join(ROOT, "baselines", "rtx-pro-6000-blackwell.yaml"), encoding="utf-8") as _handle:
    ALIAS_BOMB = _handle.read().replace("id: rtx-pro-6000-blackwell", "id: bomb", 1) + "notes:\n  - &a [%s]\n" % ",".join(
        ['"%s"' % ("lol-" * 40)] * 10) + "".join(
        "  - &%s [%s]\n" % (chr(98 + level), ",".join(["*" + chr(97 + level)] * 10)) for level in range(8))


def health(run_id, host):
    """The recorded result as host's own: its GPUs get UUIDs and serials of their own (one machine is one host)."""
    with open(HEALTH_OK, encoding="utf-8") as handle:
        envelope = json.load(handle)
    envelope.update(run_id=run_id, host=host)
    machine = zlib.crc32(host.encode("utf-8"))
    for gpu in envelope["data"]["gpus"]:
        gpu["uuid"] = "GPU-%08x-%s" % (machine, gpu["uuid"][13:])
        gpu["serial"] = "%010d%03d" % (machine, gpu["index"])
    return envelope


def write_result(results, run_id, host, content):
    directory = results / run_id / host_dir_name(host)
    directory.mkdir(parents=True, exist_ok=True)
    (directory / "health.json").write_text(content if isinstance(content, str) else json.dumps(content), encoding="utf-8")


def report(tmp_path, results, hosts=(), extra=None, timeout=300):
    """rc, output and seconds of playbooks/report.yml on run CURRENT; hosts get the RIG overrides from an inventory."""
    inventory = tmp_path / "inventory.yml"
    inventory.write_text(yaml.safe_dump({"all": {"vars": {"gpufleet_rule_overrides": RIG},
                                                 "hosts": {name: {} for name in hosts} or {"localhost": {}}}}))
    argv = [ANSIBLE_PLAYBOOK, "playbooks/report.yml", "-i", str(inventory), "-e", "gpufleet_run_id=%s" % CURRENT,
            "-e", "gpufleet_results_dir=%s" % results, "-e", json.dumps(extra or {})]
    if hosts:
        argv += ["-e", "gpufleet_hosts=all"]
    started = time.monotonic()
    with subprocess.Popen(argv, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE) as process:
        try:
            stdout, stderr = process.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            # A report that blocks fails the test, ended with every process it forked (ansible's workers start
            # sessions of their own, so its process group would leave them behind).
            for pid in descendants(process_table() or {}, process.pid) + [process.pid]:
                try:
                    os.kill(pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
            process.communicate()
            pytest.fail("playbooks/report.yml was still running after %d s: a read blocked" % timeout)
    return process.returncode, stdout + stderr, time.monotonic() - started


def fleet_of(results):
    with open(os.path.join(results, CURRENT, "fleet.json"), encoding="utf-8") as handle:
        return json.load(handle)


def assert_every_output_written(results, hosts):
    run_dir = os.path.join(results, CURRENT)
    for name in FLEET_OUTPUTS:
        assert os.path.isfile(os.path.join(run_dir, name)), name
    for host in hosts:
        for name in ("dossier.html", "dossier.md"):
            assert os.path.isfile(os.path.join(run_dir, host_dir_name(host), name)), (host, name)


def drift(host):
    return [check for check in host["checks"] if check["id"].startswith("drift.")]


def test_a_garbage_truncated_or_schema_breaking_previous_health_result_is_said_on_every_drift_check(tmp_path):
    results = tmp_path / "results"
    shaped = health(PREVIOUS, "node-shaped")
    shaped["data"]["gpus"] = "x"
    previous = {"node-ok": health(PREVIOUS, "node-ok"), "node-garbage": "\x00garbage, not JSON",
                "node-truncated": json.dumps(health(PREVIOUS, "node-truncated"))[:500], "node-shaped": shaped}
    for host, content in previous.items():
        write_result(results, PREVIOUS, host, content)
        write_result(results, CURRENT, host, health(CURRENT, host))
    code, output, unused = report(tmp_path, results, hosts=sorted(previous))
    text = output.decode("utf-8", "replace")
    assert code == 0, text
    assert "Traceback" not in text
    fleet = fleet_of(results)
    assert sorted(fleet["hosts"]) == sorted(previous)
    compared = sorted((check["id"], check["gpu_index"]) for check in drift(fleet["hosts"]["node-ok"]))
    assert len(compared) >= 10 and {check["status"] for check in drift(fleet["hosts"]["node-ok"])} <= {"pass", "warn"}
    for host, words in (("node-garbage", "is unreadable: "), ("node-truncated", "is unreadable: "),
                        ("node-shaped", "breaks its schema: at data.gpus: 'x' is not of type 'array'")):
        checks = drift(fleet["hosts"][host])
        assert sorted((check["id"], check["gpu_index"]) for check in checks) == compared, host
        assert {check["status"] for check in checks} == {"skip"}, host
        reasons = {check["reason"] for check in checks}
        assert len(reasons) == 1 and reasons.pop().startswith("not compared: previous run's health.json " + words), (host, reasons)
        assert fleet["hosts"][host]["verdict"] == fleet["hosts"]["node-ok"]["verdict"], host
    assert_every_output_written(results, previous)


@pytest.fixture
def baselines_copy(tmp_path):
    directory = tmp_path / "baselines"
    shutil.copytree(os.path.join(ROOT, "baselines"), directory)
    return directory


def test_a_baseline_with_nan_is_a_clear_problem_and_the_healthy_hosts_of_that_sku_are_not_failed(tmp_path, baselines_copy):
    path = baselines_copy / "h200-sxm.yaml"
    text = path.read_text()
    assert "    value: 700\n" in text
    path.write_text(text.replace("    value: 700\n", "    value: .nan\n", 1))
    results = tmp_path / "results"
    hosts = ["node-a", "node-b", "node-c"]
    for host in hosts:
        write_result(results, CURRENT, host, health(CURRENT, host))
    code, output, unused = report(tmp_path, results, hosts, {"gpufleet_baselines_dir": str(baselines_copy)})
    assert code == 0, output.decode("utf-8", "replace")
    fleet = fleet_of(results)
    problems = [check["reason"] for check in fleet["unmatched_rules"] if check["id"] == "baselines.load"]
    assert problems == ["%s/h200-sxm.yaml skipped: baseline.datasheet.power.value is nan; it must be a finite "
                        "number; hosts of that SKU are compared with their peers only" % baselines_copy]
    for host in hosts:
        verdict = fleet["hosts"][host]
        assert verdict["verdict"] in ("pass", "warn"), (host, verdict["reasons"])
        assert not [check for check in verdict["checks"] if "nan" in check["reason"].lower()], host
    assert_every_output_written(results, hosts)


def test_a_yaml_alias_bomb_in_a_baseline_is_refused_at_once(tmp_path, baselines_copy):
    assert 3500 < len(ALIAS_BOMB) <= 6144
    (baselines_copy / "bomb.yaml").write_text(ALIAS_BOMB)
    results = tmp_path / "results"
    hosts = ["node-a", "node-b"]
    for host in hosts:
        write_result(results, CURRENT, host, health(CURRENT, host))
    code, output, seconds = report(tmp_path, results, hosts, {"gpufleet_baselines_dir": str(baselines_copy)})
    assert code == 0, output.decode("utf-8", "replace")
    # The whole playbook, Ansible's start included; the refusal itself takes well under a millisecond.
    assert seconds < 60, seconds
    fleet = fleet_of(results)
    problems = [check["reason"] for check in fleet["unmatched_rules"] if check["id"] == "baselines.load"]
    assert len(problems) == 1 and problems[0].startswith("{0}/bomb.yaml skipped: {0}/bomb.yaml is not valid YAML: ".format(baselines_copy) +
                                                         "found the anchor &a: anchors and aliases are not allowed"), problems
    assert {fleet["hosts"][host]["sku"] for host in hosts} == {"h200-sxm"}
    assert {fleet["hosts"][host]["verdict"] for host in hosts} <= {"pass", "warn"}
    assert_every_output_written(results, hosts)


@pytest.fixture(scope="module")
def control_character_run(tmp_path_factory):
    tmp_path = tmp_path_factory.mktemp("control")
    results = tmp_path / "results"
    hosts = [CONTROL_HOST, "node-ok"]
    for host in hosts:
        envelope = health(CURRENT, host)
        envelope["data"]["platform"]["hostname"] = host
        write_result(results, CURRENT, host, envelope)
    code, output, unused = report(tmp_path, results)
    return code, output, results, hosts


def test_a_host_name_with_control_characters_reaches_no_written_file_raw(control_character_run):
    code, output, results, hosts = control_character_run
    # Both hosts fail (no inventory gives them RIG's override, so 2 of the 8 GPUs their SKU has are expected) and every
    # profile gates (issue 44): the gate's failure, which names the host, is said to the terminal too (next test).
    assert code == 2, output.decode("utf-8", "replace")
    assert b"Action failed: evil\\x1b[31m\\x07node: fail - " in output
    fleet = fleet_of(results)
    assert sorted(fleet["hosts"]) == sorted(hosts)
    assert fleet["hosts"][CONTROL_HOST]["verdict"] == fleet["hosts"]["node-ok"]["verdict"]
    assert_every_output_written(results, hosts)
    for folder, unused_dirs, files in os.walk(os.path.join(results, CURRENT)):
        for name in files:
            with open(os.path.join(folder, name), "rb") as handle:
                content = handle.read()
            if name != "health.json":  # written by this test, as the probe would (JSON escapes ESC and BEL itself)
                assert not RAW_CONTROL.search(content), (folder, name, RAW_CONTROL.findall(content)[:5])
    with open(os.path.join(results, CURRENT, "index.md"), encoding="utf-8") as handle:
        assert "evil\\\\x1b\\[31m\\\\x07node" in handle.read()
    with open(os.path.join(results, CURRENT, "gpufleet.prom"), encoding="utf-8") as handle:
        assert 'host="evil\\\\x1b[31m\\\\x07node"' in handle.read()
    # The summary lines as the debug task prints them (as JSON, so the backslash is doubled).
    assert b'"evil\\\\x1b[31m\\\\x07node: fail - ' in output


def test_a_host_name_with_control_characters_reaches_the_terminal_escaped(control_character_run):
    output = control_character_run[1]
    assert not RAW_CONTROL.search(output), RAW_CONTROL.findall(output)[:5]


def test_hostile_result_files_and_a_linked_host_directory_are_errors_the_gate_refuses_and_the_report_finishes(tmp_path):
    """Issue 44, point 5, through the real playbooks/report.yml made from the run's directory alone (no inventory): a
    FIFO where a result should be (before: the report hung for ever), a link to /dev/zero and a host directory that is a
    link (before: the host vanished) are each that host's error in fleet.json, and the gate names them."""
    results = tmp_path / "results"
    hosts = ["node-ok", "node-fifo", "node-zero", "node-linked"]
    for host in hosts[:3]:
        write_result(results, CURRENT, host, health(CURRENT, host))
    fifo, zero = (results / CURRENT / host / "health.json" for host in ("node-fifo", "node-zero"))
    fifo.unlink()
    os.mkfifo(str(fifo))
    zero.unlink()
    os.symlink("/dev/zero", str(zero))
    write_result(tmp_path, "elsewhere", "node-linked", health(CURRENT, "node-linked"))
    os.symlink(str(tmp_path / "elsewhere" / "node-linked"), str(results / CURRENT / "node-linked"))
    # A report that blocks fails here by subprocess's TimeoutExpired instead of hanging the suite (it takes about 15 s).
    code, output, unused = report(tmp_path, results, extra={"gpufleet_profile": "acceptance"}, timeout=150)
    text = output.decode("utf-8", "replace")
    assert code == 2 and "Traceback" not in text, text
    fleet = fleet_of(results)
    assert sorted(fleet["hosts"]) == sorted(hosts)
    for host, words in (("node-fifo", "health.json is a FIFO (named pipe), not a regular file"),
                        ("node-zero", "health.json is a symbolic link (to /dev/zero)"),
                        ("node-linked", "is a symbolic link (to %s)" % (tmp_path / "elsewhere" / "node-linked"))):
        verdict = fleet["hosts"][host]
        assert verdict["verdict"] == "error" and any(words in reason for reason in verdict["reasons"]), (host, verdict)
    assert fleet["hosts"]["node-ok"]["verdict"] != "error"
    refused = re.search(r"the gate refused \d+ host\(s\): ([^\"\n]*)", text)
    assert refused and {"node-fifo", "node-zero", "node-linked"} <= set(refused.group(1).split(", ")), text
