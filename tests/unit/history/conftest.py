"""Judged runs for the run index's tests: synthetic health runs (benchmarks/synthetic_fleet.py) judged and reported as
the report action does (judge_run, render_run), so that the index reads the very files a report stores."""
from __future__ import annotations

import json
import os
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
sys.path.insert(0, os.path.join(ROOT, "benchmarks"))

from synthetic_fleet import write_synthetic_run  # noqa: E402

from ansible_collections.gpufleet.validation.plugins.plugin_utils.history.report_update import trend_history  # noqa: E402
from ansible_collections.gpufleet.validation.plugins.plugin_utils.report.render import render_run  # noqa: E402
from ansible_collections.gpufleet.validation.plugins.plugin_utils.run_judgement import judge_run  # noqa: E402
from ansible_collections.gpufleet.validation.plugins.plugin_utils.store.atomic import text_writer_below  # noqa: E402
from ansible_collections.gpufleet.validation.plugins.plugin_utils.store.paths import host_dir_name  # noqa: E402
from ansible_collections.gpufleet.validation.plugins.plugin_utils.store.stored_run import load_run  # noqa: E402


def report_run(results_dir: str, run_id: str, hosts: int = 3, seed: int = 1, renamed: dict = None, trends: bool = False) -> list:
    """Write a synthetic run of hosts (8 GPUs each; host 5 of 97 has ECC errors), judge it and write its report as the
    report action does; returns the host names. renamed: {synthetic name: the name that host has instead}; trends: judge
    with the trend checks, reading the run index as the report does (which updates it first)."""
    names = write_synthetic_run(results_dir, run_id, hosts, gpus=8, seed=seed)
    path = os.path.join(results_dir, run_id)
    for old, new in (renamed or {}).items():
        os.rename(os.path.join(path, old), os.path.join(path, host_dir_name(new)))
        result = os.path.join(path, host_dir_name(new), "health.json")
        with open(result, encoding="utf-8") as handle:
            envelope = json.load(handle)
        envelope["host"] = envelope["data"]["platform"]["hostname"] = new
        with open(result, "w", encoding="utf-8") as handle:
            json.dump(envelope, handle)
        names[names.index(old)] = new
    run = load_run(path, names, {})
    judgement = judge_run(run, results_dir, {}, trend_history=trend_history(results_dir, run_id, {}) if trends else None)
    render_run(path, names, {}, text_writer_below(results_dir), judgement=judgement, loaded=run, workers=1)
    return names


@pytest.fixture(name="report_run", scope="session")
def report_run_fixture():
    return report_run
