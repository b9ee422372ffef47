"""Judged runs for the run index's tests: synthetic health runs (benchmarks/synthetic_fleet.py) judged and reported as
the report action does (judge_run, render_run), so that the index reads the very files a report stores."""
from __future__ import annotations

import os
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
sys.path.insert(0, os.path.join(ROOT, "benchmarks"))

from synthetic_fleet import write_synthetic_run  # noqa: E402

from ansible_collections.gpufleet.validation.plugins.plugin_utils.report.render import render_run  # noqa: E402
from ansible_collections.gpufleet.validation.plugins.plugin_utils.run_judgement import judge_run  # noqa: E402
from ansible_collections.gpufleet.validation.plugins.plugin_utils.store.atomic import text_writer_below  # noqa: E402
from ansible_collections.gpufleet.validation.plugins.plugin_utils.store.stored_run import load_run  # noqa: E402


def report_run(results_dir: str, run_id: str, hosts: int = 3, seed: int = 1) -> list:
    """Write a synthetic run of hosts (8 GPUs each; host 5 of 97 has ECC errors), judge it and write its report as the
    report action does; returns the host names."""
    names = write_synthetic_run(results_dir, run_id, hosts, gpus=8, seed=seed)
    path = os.path.join(results_dir, run_id)
    run = load_run(path, names, {})
    judgement = judge_run(run, results_dir, {})
    render_run(path, names, {}, text_writer_below(results_dir), judgement=judgement, loaded=run, workers=1)
    return names


@pytest.fixture(name="report_run", scope="session")
def report_run_fixture():
    return report_run
