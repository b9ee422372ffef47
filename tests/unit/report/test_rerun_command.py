"""Issue 31: the dossier's "Command as run" pointed at the probe's temporary copy on the host and at a --params file, both
deleted after the run. The dossier now also shows lines a person pastes into a shell: copy the collection's probes/ to
the host, run the probe there under the same Python with the recorded parameters inline (--params-json).

These tests paste them: each line goes to a real POSIX shell (sh), with the local-host copy the scp line's comment gives,
and the probe that runs must get exactly the recorded parameters, a hostile string among them.
"""
from __future__ import annotations

import json
import os
import shlex
import subprocess
import sys

import pytest

from ansible_collections.gpufleet.validation.plugins.plugin_utils.report.rerun import rerun_command
from ansible_collections.gpufleet.validation.plugins.plugin_utils.report.host_pages import (
    render_host_dossier_html, render_host_dossier_markdown)
from ansible_collections.gpufleet.validation.plugins.plugin_utils.store.stored_run import load_run

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
PROBELIB = os.path.join(ROOT, "probes", "probelib")
HOSTILE = "it's $HOME `id` \"q\" \\ $(echo no)\nnext line é ; rm -rf x"
ECHO_PROBE = '''import sys
from probelib.runner import ProbeResult, main
sys.exit(main("echo", "Echo the parameters.", lambda params: ProbeResult("ok", {"params": params})))
'''
ECHO_SPEC = {"properties": {"note": {"type": "string", "default": "", "description": "n"},
                            "count": {"type": "integer", "default": 1, "description": "c"},
                            "flag": {"type": "boolean", "default": False, "description": "f"}}}
GONE = "/root/.ansible_async/j1.work"  # where the argv as run pointed


def _paste(lines, collection, home):
    """Run the pasted lines in sh as a person would on a local host: COLLECTION set to the clone-like folder, the scp line
    replaced by the cp its comment gives for a local host. Returns the probe's stdout, parsed."""
    script = []
    for line in lines.splitlines():
        if line.startswith("COLLECTION="):
            line = "COLLECTION=%s" % shlex.quote(str(collection))
        elif line.startswith("scp "):
            line = line.split("# a local host: ", 1)[1]
        script.append(line)
    completed = subprocess.run(["sh", "-c", "\n".join(script)], env={"HOME": str(home), "PATH": os.environ["PATH"]},
                               capture_output=True, text=True, timeout=120, check=False)
    assert completed.returncode == 0, (completed.stdout, completed.stderr, "\n".join(script))
    return json.loads(completed.stdout)


def _fake_collection(tmp_path):
    collection = tmp_path / "collection"
    (collection / "probes").mkdir(parents=True)
    (collection / "probes" / "echo.py").write_text(ECHO_PROBE)
    spec = collection / "plugins" / "plugin_utils" / "probes" / "echo"
    spec.mkdir(parents=True)
    (spec / "params.json").write_text(json.dumps(ECHO_SPEC))  # where a checkout has it; the pasted lines copy it
    os.symlink(PROBELIB, str(collection / "probes" / "probelib"))
    home = tmp_path / "home"
    home.mkdir()
    return collection, home


def test_the_pasted_lines_run_the_probe_under_its_python_with_the_recorded_parameters(tmp_path):
    collection, home = _fake_collection(tmp_path)
    params = {"note": HOSTILE, "count": 3, "flag": True}
    envelope = {"probe": "echo", "command": [sys.executable, GONE + "/echo.py", "--params", GONE + "/params.json"],
                "params": params}
    lines = rerun_command(envelope, "gpu-a01")
    assert GONE not in lines
    assert "scp -r \"$COLLECTION/probes\" gpu-a01:gpufleet-probes" in lines and "# then on gpu-a01:" in lines
    ran = _paste(lines, collection, home)
    assert ran["status"] == "ok", ran
    assert ran["data"]["params"] == params
    assert ran["command"][1:] == ["--params-json", json.dumps(params, sort_keys=True)]
    assert ran["environment"]["python_executable"] == sys.executable
    assert not (tmp_path / "x").exists() and not (home / "x").exists()


def test_the_real_health_probe_runs_from_the_pasted_lines(tmp_path):
    home = tmp_path / "home"
    home.mkdir()
    params = {"cuda_init": False, "kernel_log_lines": 5}
    lines = rerun_command({"probe": "health", "command": [sys.executable, GONE + "/health.py"], "params": params}, "localhost")
    ran = _paste(lines, ROOT, home)
    assert ran["probe"] == "health" and ran["status"] in ("ok", "partial", "unavailable"), ran["reason"]
    assert json.loads(ran["command"][-1]) == params


def test_without_recorded_parameters_it_says_so_and_runs_the_defaults(tmp_path):
    collection, home = _fake_collection(tmp_path)
    lines = rerun_command({"probe": "echo", "command": [sys.executable, GONE + "/echo.py"]}, "gpu-a01")
    assert "# (the parameters it ran with were not recorded: this runs the probe's defaults)" in lines
    assert _paste(lines, collection, home)["data"]["params"] == {"note": "", "count": 1, "flag": False}


@pytest.mark.parametrize("host", ["evil\nrm -rf ~;'", "<script>alert(1)</script>", "a b", "-oProxyCommand=x"])
def test_a_host_name_that_is_not_plain_stands_as_host(host):
    lines = rerun_command({"probe": "echo", "command": ["python3"], "params": {}}, host)
    assert host not in lines and "# then on HOST:" in lines and "<" not in lines
    assert shlex.split(lines, comments=True) == [
        "COLLECTION=~/.ansible/collections/ansible_collections/gpufleet/validation", "scp", "-r", "$COLLECTION/probes",
        "HOST:gpufleet-probes", "scp", "$COLLECTION/plugins/plugin_utils/probes/echo/params.json",
        "HOST:gpufleet-probes/echo.params.json", "python3", "$HOME/gpufleet-probes/echo.py", "--params-json", "{}"]


@pytest.mark.parametrize("host", ["gpu-a01", "gpu-a01.rack7.example.org", "10.0.0.7", "fe80::1"])
def test_a_plain_host_name_is_shown_as_it_is(host):
    lines = rerun_command({"probe": "echo", "command": ["python3"]}, host)
    assert "# then on %s:" % host in lines
    assert shlex.split(lines, comments=True)[4] == ("[%s]" % host if ":" in host else host) + ":gpufleet-probes"  # scp's IPv6


@pytest.mark.parametrize("given, expected_reason", [
    (["--params-json", '{"count": 2}'], ""),
    (["--params-json", "{bad"], "bad parameters: --params-json is not JSON: "),
    (["--params-json", "[1]"], "bad parameters: --params-json must hold a JSON object, not list"),
    (["--params-json", '{"nope": 1}'], "bad parameters: unknown parameter 'nope' (known: count, flag, note)"),
])
def test_the_runner_takes_the_parameters_inline(tmp_path, given, expected_reason):
    collection, _home = _fake_collection(tmp_path)
    completed = subprocess.run([sys.executable, str(collection / "probes" / "echo.py")] + given, capture_output=True,
                               text=True, timeout=60, check=False)
    envelope = json.loads(completed.stdout)
    assert envelope["reason"].startswith(expected_reason) and bool(envelope["reason"]) == bool(expected_reason), envelope
    if not expected_reason:
        assert envelope["data"]["params"]["count"] == 2


def test_the_runner_refuses_both_a_file_and_inline_parameters(tmp_path):
    collection, _home = _fake_collection(tmp_path)
    (tmp_path / "p.json").write_text("{}")
    completed = subprocess.run([sys.executable, str(collection / "probes" / "echo.py"), "--params", str(tmp_path / "p.json"),
                                "--params-json", "{}"], capture_output=True, text=True, timeout=60, check=False)
    assert completed.returncode == 2 and "not allowed with argument" in completed.stderr


def test_the_dossier_shows_the_lines_to_paste_and_the_command_as_run(tmp_path):
    host = tmp_path / "run1" / "gpu-a01"
    host.mkdir(parents=True)
    params = {"cuda_init": False, "note": "<b>&'"}
    envelope = {"schema_version": "1", "probe": "health", "host": "gpu-a01", "status": "error", "started": "2026-12-03T00:00:00Z",
                "duration_s": 1.0, "command": ["/opt/py/bin/python3", GONE + "/health.py", "--params", GONE + "/params.json"],
                "environment": {}, "reason": "the probe raised", "data": {}, "params": params}
    (host / "health.json").write_text(json.dumps(envelope))
    (host / "inputs.json").write_text(json.dumps({"host": "gpu-a01", "run_id": "run1", "profile": "health", "dir_name": "gpu-a01"}))
    run = load_run(str(tmp_path / "run1"), ["gpu-a01"], {})
    lines = rerun_command(envelope, "gpu-a01")
    html = render_host_dossier_html(run.hosts[0], run)
    assert "Command to run it again by hand" in html and "Command as run (its probe and parameter file" in html
    assert "/opt/py/bin/python3 &#34;$HOME/gpufleet-probes/health.py&#34; --params-json" in html
    assert "&lt;b&gt;&amp;" in html and "<b>&" not in html
    markdown = render_host_dossier_markdown(run.hosts[0], run)
    assert "```\n%s\n```" % lines in markdown
    assert GONE + "/health.py" in markdown  # the argv as run stays, as the raw truth
