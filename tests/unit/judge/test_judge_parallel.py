"""Hosts judged over several processes give the judgement one process gives: every verdict, check, drift, fleet
statistic and unmatched rule, in the same order; a host whose judging raises in a worker is that host's error."""
from __future__ import annotations

import json
import os
import sys

from ansible_collections.gpufleet.validation.plugins.plugin_utils.report import parallel as report_parallel
from ansible_collections.gpufleet.validation.plugins.plugin_utils.judge import fleet
from ansible_collections.gpufleet.validation.plugins.plugin_utils.run_judgement import judge_run
from ansible_collections.gpufleet.validation.plugins.plugin_utils.store.stored_run import load_run

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
sys.path.insert(0, os.path.join(ROOT, "benchmarks"))
from synthetic_fleet import rack_of, write_synthetic_run  # noqa: E402  pylint: disable=wrong-import-position,import-error

RUN_ID = "20261130T000000Z-000001"
PREVIOUS_RUN_ID = "20261129T000000Z-000001"
HOSTS = 60


def _judged(results, workers):
    """The judgement of a synthetic run with a previous night (drift), one host's rule overrides (a rule it alone
    fails) and one host not reached."""
    write_synthetic_run(str(results), PREVIOUS_RUN_ID, HOSTS, seed=2)
    names = write_synthetic_run(str(results), RUN_ID, HOSTS)
    groups = {name: [rack_of(name)] for name in names}
    run = load_run(os.path.join(str(results), RUN_ID), names + ["never-reached"], dict(groups, **{"never-reached": []}))
    overrides = {names[7]: {"health.gpu_count": {"params": {"expected": 4}}}}
    judgement = judge_run(run, str(results), overrides, workers=workers)
    return names, judgement, json.dumps(judgement.to_dict(), sort_keys=True)


def test_this_machine_would_fork_judges_for_a_run_this_large():
    assert report_parallel.worker_count(HOSTS, 2) == 2  # otherwise the tests below would compare serial with serial


def test_hosts_judged_in_two_processes_are_judged_as_in_one(tmp_path):
    names, serial, serial_text = _judged(tmp_path / "serial", 1)
    unused_names, unused_forked, forked_text = _judged(tmp_path / "forked", 2)
    assert forked_text == serial_text
    # what is compared is a real judgement: drift was judged, the override flagged its host alone, the ghost is unreachable
    assert serial.previous_run_id == PREVIOUS_RUN_ID
    assert any(check.id.startswith("drift.") for check in serial.hosts[names[0]].checks)
    assert [check.status for check in serial.hosts[names[7]].checks if check.id == "health.gpu_count"] == ["warn"]
    assert [check.status for check in serial.hosts[names[8]].checks if check.id == "health.gpu_count"] == ["pass"]
    assert serial.hosts["never-reached"].verdict == "unreachable"
    assert len(serial.hosts) == HOSTS + 1


def test_a_host_whose_judging_raises_in_a_worker_is_its_error_and_the_others_are_judged(tmp_path, monkeypatch):
    real = fleet.judge_host
    breaker = "%s" % sorted(write_synthetic_run(str(tmp_path / "names"), RUN_ID, HOSTS))[40]

    def judge_host(name, *args):
        if name == breaker:
            raise ZeroDivisionError("float division by zero")
        return real(name, *args)

    monkeypatch.setattr(fleet, "judge_host", judge_host)
    unused_names, serial, serial_text = _judged(tmp_path / "serial", 1)
    unused_names, unused_forked, forked_text = _judged(tmp_path / "forked", 2)
    assert forked_text == serial_text
    assert serial.hosts[breaker].verdict == "error"
    assert "judging this host raised ZeroDivisionError: float division by zero" in serial.hosts[breaker].reasons[0]
    assert sum(verdict.verdict != "error" for verdict in serial.hosts.values()) == HOSTS


def _judged_against_earlier_nights(results, workers):
    """A run whose hosts' earlier results are searched over ``workers`` processes: the night before has the same GPUs,
    except that one host's directory is another machine's name there (its GPUs moved), one host's result there is
    unreadable (a duplicate key) and one host is missing there (found in the night before that)."""
    older, previous = "20261128T000000Z-000001", PREVIOUS_RUN_ID
    write_synthetic_run(str(results), older, HOSTS, seed=3)
    write_synthetic_run(str(results), previous, HOSTS, seed=1)
    names = sorted(write_synthetic_run(str(results), RUN_ID, HOSTS, seed=1))
    os.rename(str(results / previous / names[3]), str(results / previous / "old-machine"))
    (results / previous / names[5] / "health.json").write_text('{"status": "ok", "status": "ok"}')
    (results / previous / names[7] / "health.json").unlink()
    os.rmdir(str(results / previous / names[7]))
    run = load_run(os.path.join(str(results), RUN_ID), names, {name: [rack_of(name)] for name in names})
    judgement = judge_run(run, str(results), {}, workers=workers)
    return names, judgement, json.dumps(judgement.to_dict(), sort_keys=True)


def test_the_earlier_runs_searched_in_two_processes_are_found_as_in_one(tmp_path):
    names, serial, serial_text = _judged_against_earlier_nights(tmp_path / "serial", 1)
    unused_names, unused_forked, forked_text = _judged_against_earlier_nights(tmp_path / "forked", 2)
    assert forked_text == serial_text
    assert serial.previous_run_id == PREVIOUS_RUN_ID
    assert any(reason.startswith("fleet.gpus_moved: not validated: its GPUs were last reported by another host, old-machine")
               for reason in serial.hosts[names[3]].reasons), serial.hosts[names[3]].reasons
    assert any("previous run's health.json is unreadable" in check.reason for check in serial.hosts[names[5]].checks)
    assert any(check.id.startswith("drift.") and "20261128T000000Z-000001" in check.reason for check in serial.hosts[names[7]].checks)
