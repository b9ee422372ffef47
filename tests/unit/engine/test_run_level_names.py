"""No host's directory can be one of the run's own files: a host named run.json, index.html, fleet.json or junit.xml
gets its own directory, and the fleet outputs are written for everyone (issue 32)."""
from __future__ import annotations

import json
import os
from urllib.parse import unquote

import pytest

from ansible_collections.gpufleet.validation.plugins.plugin_utils.report.render import render_run
from ansible_collections.gpufleet.validation.plugins.plugin_utils.run_judgement import judge_run
from ansible_collections.gpufleet.validation.plugins.plugin_utils.store import run_dir
from ansible_collections.gpufleet.validation.plugins.plugin_utils.store.atomic import text_writer_below
from ansible_collections.gpufleet.validation.plugins.plugin_utils.store.paths import (
    OUTCOMES_DIR, RUN_LEVEL_DIRS, RUN_LEVEL_NAMES, SLURM_ACTIONS_FILE, host_dir_name)
from ansible_collections.gpufleet.validation.plugins.plugin_utils.store.stored_run import load_run

RUN_ID = "20261203T010000Z-000001"
HOSTS = ("run.json", "index.html", "index.md", "fleet.json", "junit.xml", "gpufleet.prom", "gpu-a01")


@pytest.mark.parametrize("name", RUN_LEVEL_NAMES)
def test_a_run_level_name_is_escaped_and_unquotes_back(name):
    escaped = host_dir_name(name)
    assert escaped not in RUN_LEVEL_NAMES and escaped.startswith("%") and unquote(escaped) == name


def test_the_escape_stays_injective():
    names = set(RUN_LEVEL_NAMES) | {host_dir_name(name) for name in RUN_LEVEL_NAMES} | {"%2572un.json", ".run.json", "run.jsonx"}
    assert len({host_dir_name(name) for name in names}) == len(names)
    assert host_dir_name("gpu-a01") == "gpu-a01"


@pytest.mark.parametrize("name", ("Run.json", "INDEX.HTML", "Fleet.Json"))
def test_a_run_level_name_in_another_case_is_escaped_too(name):
    """A case-insensitive file system (APFS, an SMB share) holds Index.html where index.html is."""
    escaped = host_dir_name(name)
    assert escaped.lower() not in RUN_LEVEL_NAMES and escaped.startswith("%") and unquote(escaped) == name


def _health(host):
    return {"schema_version": "1", "probe": "health", "host": host, "status": "unavailable",
            "reason": "no NVIDIA GPU: /dev/nvidia0 does not exist", "started": "2026-12-03T01:00:00+00:00",
            "duration_s": 1.0, "command": ["python3", "health.py"], "environment": {}, "data": {}, "run_id": RUN_ID}


def test_hosts_named_like_the_runs_files_each_get_a_dossier_and_the_fleet_outputs_are_written(tmp_path):
    results = tmp_path / "results"
    writer = run_dir.playbook_writer(False, "quick")
    run_dir.open_run(str(results), RUN_ID, writer)
    for host in HOSTS:
        with run_dir.claimed_host_dir(str(results), RUN_ID, host, writer) as host_fd:
            run_dir.write_host_inputs(host_fd, run_dir.host_inputs(host, RUN_ID, writer, "quick", {}, [], None), host)
        (results / RUN_ID / host_dir_name(host) / "health.json").write_text(json.dumps(_health(host)), encoding="utf-8")
    run = load_run(str(results / RUN_ID), HOSTS)
    assert sorted(host.name for host in run.hosts) == sorted(HOSTS) and not run.stray
    judgement = judge_run(run, str(results), {})
    render_run(run.run_dir, HOSTS, {}, text_writer_below(str(results)), judgement=judgement, loaded=run)
    run_path = results / RUN_ID
    assert json.loads((run_path / "run.json").read_text())["writers"][0]["writer_id"] == writer["writer_id"]
    fleet = json.loads((run_path / "fleet.json").read_text())
    assert sorted(fleet["hosts"]) == sorted(HOSTS)
    for host in HOSTS:
        assert (run_path / fleet["hosts"][host]["dossier"]["html"]).is_file(), host
    # The run's own files are exactly the names that host_dir_name keeps hosts off: one list for both. The outcomes
    # are a directory; slurm-actions.json is written only by acting.
    files = sorted(entry.name for entry in os.scandir(run_path) if entry.is_file(follow_symlinks=False))
    assert files == sorted(name for name in RUN_LEVEL_NAMES if name not in RUN_LEVEL_DIRS + (SLURM_ACTIONS_FILE,))
    # The outcomes directory the report wrote beside the hosts' is never read as a host's (nor named a stray one).
    assert len(os.listdir(run_path / OUTCOMES_DIR)) == len(HOSTS)
    again = load_run(str(run_path), HOSTS)
    assert sorted(host.name for host in again.hosts) == sorted(HOSTS) and not again.stray
    assert "<testsuite" in (run_path / "junit.xml").read_text() and (run_path / "index.html").read_text().count("dossier.html") >= 7


def test_a_run_written_before_run_json_reads_an_escaped_name_back(tmp_path):
    run_path = tmp_path / "results" / RUN_ID
    for host in ("index.html", "gpu-a01"):
        (run_path / host_dir_name(host)).mkdir(parents=True)
        (run_path / host_dir_name(host) / "health.json").write_text(json.dumps(_health(host)), encoding="utf-8")
    assert sorted(host.name for host in load_run(str(run_path)).hosts) == ["gpu-a01", "index.html"]
