"""Dossiers rendered over several processes are the dossiers one process renders, byte for byte; a host that breaks
its renderer in a worker is that host's error in every fleet output; a worker that dies leaves nothing undone."""
from __future__ import annotations

import json
import os
import sys
import threading

from ansible_collections.gpufleet.validation.plugins.plugin_utils.report import parallel as report_parallel, render as report_render
from ansible_collections.gpufleet.validation.plugins.plugin_utils.store.atomic import write_text_atomically
from ansible_collections.gpufleet.validation.plugins.plugin_utils.store.stored_run import load_run
from ansible_collections.gpufleet.validation.plugins.plugin_utils.run_judgement import judge_run

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
sys.path.insert(0, os.path.join(ROOT, "benchmarks"))
from synthetic_fleet import rack_of, write_synthetic_run  # noqa: E402  pylint: disable=wrong-import-position,import-error

RUN_ID = "20261130T000000Z-000001"
HOSTS = 60


def _render(results, workers, breaker=None, monkeypatch=None):
    names = write_synthetic_run(str(results), RUN_ID, HOSTS)
    groups = {name: [rack_of(name)] for name in names}
    run_path = os.path.join(str(results), RUN_ID)
    run = load_run(run_path, names, groups)
    judgement = judge_run(run, str(results), {})
    if breaker is not None:
        real = report_render.render_host_dossier_html

        def render(host, run_model, judged=None):
            if host.name == breaker:
                raise ZeroDivisionError("float division by zero")
            return real(host, run_model, judged)
        monkeypatch.setattr(report_render, "render_host_dossier_html", render)
    report_render.render_run(run_path, names, groups, write_text_atomically, judgement=judgement, loaded=run,
                             workers=workers)
    files = {}
    for folder, unused_dirs, entries in os.walk(run_path):
        for entry in entries:
            if entry.startswith(("dossier.", "index.", "fleet.json", "junit.xml", "gpufleet.prom")):
                path = os.path.join(folder, entry)
                with open(path, encoding="utf-8") as handle:
                    files[os.path.relpath(path, run_path)] = handle.read()
    return names, judgement, files


def test_this_machine_would_fork_workers_for_a_run_this_large():
    assert report_parallel.worker_count(HOSTS, 2) == 2  # otherwise the tests below would compare serial with serial
    assert report_parallel.worker_count(HOSTS - 40, 2) == 1  # too few hosts to be worth a fork
    assert report_parallel.worker_count(HOSTS, 1) == 1


def test_dossiers_from_two_processes_are_byte_for_byte_those_of_one(tmp_path):
    names, unused_judgement, serial = _render(tmp_path / "serial", 1)
    unused_names, unused_judgement, forked = _render(tmp_path / "forked", 2)
    assert sorted(forked) == sorted(serial)
    assert len([path for path in serial if path.endswith("dossier.html")]) == len(names) == HOSTS
    differing = [path for path in serial if forked[path] != serial[path]]
    assert differing == []


def test_a_host_whose_renderer_raises_in_a_worker_is_that_hosts_error_in_the_fleet_outputs(tmp_path, monkeypatch):
    names, judgement, files = _render(tmp_path / "forked", 2, breaker="gpu-r01-n010", monkeypatch=monkeypatch)
    assert "gpu-r01-n010" in names
    assert judgement.hosts["gpu-r01-n010"].verdict == "error"
    assert "raised ZeroDivisionError: float division by zero" in judgement.hosts["gpu-r01-n010"].reasons[0]
    assert json.loads(files["fleet.json"])["hosts"]["gpu-r01-n010"]["verdict"] == "error"
    assert "float division by zero" in files["index.html"]
    assert 'host="gpu-r01-n010",verdict="error"} 1' in files["gpufleet.prom"]
    # Every other host's dossiers are written (the broken one's renderer raises for its stand-in too: the index says why).
    assert sum(path.endswith("dossier.html") for path in files) == HOSTS - 1


def test_what_a_dead_worker_left_undone_is_done_here(monkeypatch):
    main = os.getpid()

    def job(index):
        if index == 7 and os.getpid() != main:
            os._exit(3)  # pylint: disable=protected-access  # as a worker killed by the OOM killer
        return index * index
    done = report_parallel.run_indexed(100, job, 2)
    assert done == {index: index * index for index in range(100)}


def test_no_fork_while_another_thread_runs():
    release = threading.Event()
    other = threading.Thread(target=release.wait)
    other.start()
    try:
        assert report_parallel.worker_count(HOSTS, 2) == 1
    finally:
        release.set()
        other.join()


def test_the_fleet_outputs_of_a_large_run_are_rendered_side_by_side_and_one_that_fails_is_named(tmp_path, monkeypatch):
    pids = tmp_path / "pids"
    pids.mkdir()
    real_prometheus = report_render.prometheus_chunks

    def prometheus(*args):
        (pids / ("prom-%d" % os.getpid())).touch()
        return real_prometheus(*args)

    def junit(unused_judgement, unused_gated, unused_run):
        (pids / ("junit-%d" % os.getpid())).touch()
        raise MemoryError("no room for the test suites")
    monkeypatch.setattr(report_render, "prometheus_chunks", prometheus)
    monkeypatch.setattr(report_render, "junit_chunks", junit)
    try:
        _render(tmp_path / "forked", 2)
    except ValueError as exc:
        assert str(exc) == "could not write junit.xml: MemoryError: no room for the test suites"
    else:
        raise AssertionError("render_run did not say that junit.xml could not be written")
    assert {name.split("-")[0] for name in os.listdir(pids)} == {"prom", "junit"}
    assert str(os.getpid()) not in {name.split("-")[1] for name in os.listdir(pids)}
    run_path = tmp_path / "forked" / RUN_ID
    assert sorted(path.name for path in run_path.iterdir() if path.is_file()) == [
        "fleet.json", "gpufleet.prom", "index.html", "index.md"]


def test_the_fleet_outputs_of_a_run_past_the_bound_are_rendered_here(tmp_path, monkeypatch):
    seen = []
    real_prometheus = report_render.prometheus_chunks

    def prometheus(*args):
        seen.append(os.getpid())  # only what runs in this process is kept in this list
        return real_prometheus(*args)
    monkeypatch.setattr(report_render, "prometheus_chunks", prometheus)
    monkeypatch.setattr(report_render, "FLEET_OUTPUTS_FORKED_UP_TO_HOSTS", HOSTS - 1)
    unused_names, unused_judgement, files = _render(tmp_path / "forked", 2)
    assert seen == [os.getpid()]
    assert 'verdict="pass"' in files["gpufleet.prom"]


def test_a_worker_is_replaced_by_a_fresh_fork_after_its_share_of_items():
    """Each forked worker copies the caller's pages that the items it runs touch (docs/scale.md): a worker that ran
    every item of 10,000 hosts held a copy of half the judged run. A fresh fork every worker_items bounds that copy."""
    answers = report_parallel.run_indexed(40, lambda index: (index * 2, os.getpid()), 2, chunk_items=5, worker_items=5)
    assert [answers[index][0] for index in range(40)] == [index * 2 for index in range(40)]
    items_per_process = {}
    for unused_value, pid in answers.values():
        items_per_process[pid] = items_per_process.get(pid, 0) + 1
    assert os.getpid() not in items_per_process
    assert len(items_per_process) >= 4  # 40 items, 10 per pool of two workers: four pools
    assert max(items_per_process.values()) <= 10


def test_the_templates_a_dossier_needs_are_compiled_before_the_workers_fork(tmp_path, monkeypatch):
    """render_run compiles every template before forking: a worker that compiled its own would do it again at every
    fresh fork (a quarter of a CPU second each)."""
    from ansible_collections.gpufleet.validation.plugins.plugin_utils.report import markup  # pylint: disable=import-outside-toplevel
    compiled = tmp_path / "compiled_by"
    for environment in (markup.HTML, markup.MARKDOWN):
        real = environment.compile

        def compile_and_count(*args, real_compile=real, **kwargs):
            with open(compiled, "a", encoding="utf-8") as handle:  # a file: the workers' lists would stay in the workers
                handle.write("%d\n" % os.getpid())
            return real_compile(*args, **kwargs)
        monkeypatch.setattr(environment, "compile", compile_and_count)
        environment.cache.clear()
    _render(tmp_path / "results", 2)
    compilers = set(compiled.read_text(encoding="utf-8").split())
    assert compilers == {str(os.getpid())}
