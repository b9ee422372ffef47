"""A loaded run keeps no envelope in memory: each is read back from the store when the judge or a dossier asks for
it, and a result replaced or removed after loading fails that host (never silently judged on the old one), while every
other host is judged and reported."""
from __future__ import annotations

import json
import os
import sys

from ansible_collections.gpufleet.validation.plugins.plugin_utils import run_judgement
from ansible_collections.gpufleet.validation.plugins.plugin_utils.report.exports import (fleet_json_text, junit_xml,
                                                                                         prometheus_text, run_timestamp)
from ansible_collections.gpufleet.validation.plugins.plugin_utils.report.render import render_run
from ansible_collections.gpufleet.validation.plugins.plugin_utils.run_judgement import judge_run
from ansible_collections.gpufleet.validation.plugins.plugin_utils.store.atomic import write_text_atomically
from ansible_collections.gpufleet.validation.plugins.plugin_utils.store.previous import find_previous_results
from ansible_collections.gpufleet.validation.plugins.plugin_utils.store.stored_run import load_run

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
sys.path.insert(0, os.path.join(ROOT, "benchmarks"))
from synthetic_fleet import rack_of, write_synthetic_run  # noqa: E402  pylint: disable=wrong-import-position,import-error

RUN_ID = "20261130T000000Z-000001"
HOSTS = 6


def _loaded(results):
    names = write_synthetic_run(str(results), RUN_ID, HOSTS, gpus=4)
    groups = {name: [rack_of(name)] for name in names}
    run_path = os.path.join(str(results), RUN_ID)
    return names, groups, run_path, load_run(run_path, names, groups)


def _health_file(run_path, host):
    return os.path.join(run_path, host, "health.json")


def test_a_loaded_run_holds_no_envelope_and_reads_each_back_as_stored(tmp_path):
    names, unused_groups, run_path, run = _loaded(tmp_path)
    for host in run.hosts:
        entry = host.probes["health"]
        assert entry.held_envelope is None
        with open(_health_file(run_path, host.name), encoding="utf-8") as handle:
            assert entry.envelope == json.load(handle)
        assert entry.collection_version == "0.1.0" and entry.started == entry.envelope["started"]
    assert run.collection_versions() == ["0.1.0"]
    assert [host.name for host in run.hosts] == sorted(names)


def _replace(path, change):
    with open(path, encoding="utf-8") as handle:
        envelope = json.load(handle)
    change(envelope)
    write_text_atomically(path, json.dumps(envelope))


def _index(run_path):
    with open(os.path.join(run_path, "fleet.json"), encoding="utf-8") as handle:
        return json.load(handle)["hosts"]


def test_a_result_replaced_after_loading_fails_that_host_not_the_run(tmp_path):
    names, groups, run_path, run = _loaded(tmp_path)
    changed = names[2]
    # Another slice writing into the run after the report loaded it: an ECC error the loaded state never saw.
    _replace(_health_file(run_path, changed),
             lambda envelope: envelope["data"]["gpus"][0]["ecc"].update(volatile_uncorrected_count=7))
    judgement = judge_run(run, str(tmp_path), {})
    verdict = judgement.hosts[changed]
    assert verdict.verdict == "error"
    assert "health.json of %s was replaced after this report loaded it" % changed in verdict.reasons[0]
    assert all(judgement.hosts[name].verdict != "error" for name in names if name != changed)
    render_run(run_path, names, groups, write_text_atomically, judgement=judgement, loaded=run)
    fleet = _index(run_path)
    assert fleet[changed]["verdict"] == "error"
    assert all(fleet[name]["verdict"] != "error" for name in names if name != changed)
    for name in names:
        with open(os.path.join(run_path, name, "dossier.html"), encoding="utf-8") as handle:
            dossier = handle.read()
        assert ("was replaced after this report loaded it" in dossier) == (name == changed)


def test_a_result_removed_after_loading_fails_that_host_with_why(tmp_path):
    names, groups, run_path, run = _loaded(tmp_path)
    gone = names[4]
    os.unlink(_health_file(run_path, gone))
    judgement = judge_run(run, str(tmp_path), {})
    assert judgement.hosts[gone].verdict == "error"
    assert "health.json of %s could not be read again after this report loaded it" % gone in judgement.hosts[gone].reasons[0]
    render_run(run_path, names, groups, write_text_atomically, judgement=judgement, loaded=run)
    assert _index(run_path)[gone]["verdict"] == "error"
    assert sum(fleet["verdict"] == "error" for fleet in _index(run_path).values()) == 1


def test_a_result_rewritten_with_the_same_bytes_is_still_a_new_file(tmp_path):
    names, unused_groups, run_path, run = _loaded(tmp_path)
    _replace(_health_file(run_path, names[0]), lambda envelope: None)
    judgement = judge_run(run, str(tmp_path), {})
    assert judgement.hosts[names[0]].verdict == "error"


def test_earlier_results_are_read_back_too_and_a_replaced_one_is_not_compared(tmp_path, monkeypatch):
    earlier = "20261129T000000Z-000001"
    write_synthetic_run(str(tmp_path), earlier, HOSTS, gpus=4, seed=2)
    names, unused_groups, unused_run_path, run = _loaded(tmp_path)
    replaced = names[1]
    found_by_judge = []

    def find_then_replace(*args, **kwargs):
        found = find_previous_results(*args, **kwargs)
        found_by_judge.append(found)
        # Replaced between the judge finding the earlier run and comparing with it.
        _replace(os.path.join(str(tmp_path), earlier, replaced, "health.json"), lambda envelope: None)
        return found

    monkeypatch.setattr(run_judgement, "find_previous_results", find_then_replace)
    judgement = run_judgement.judge_run(run, str(tmp_path), {})
    assert all(entry.held_envelope is None for envelopes in found_by_judge[0].envelopes.values()
               for entry in envelopes._entries.values())  # pylint: disable=protected-access
    assert judgement.previous_run_id == earlier
    drift = [check for check in judgement.hosts[replaced].checks if check.id == "drift.previous_run"]
    assert len(drift) == 1 and drift[0].status == "skip"
    assert "health.json of %s was replaced after this report loaded it" % replaced in drift[0].reason
    assert judgement.hosts[replaced].verdict != "error"
    for name in names:
        if name != replaced:
            assert any(check.id.startswith("drift.") and check.status == "pass" for check in judgement.hosts[name].checks)


def test_the_exports_are_written_a_host_at_a_time_and_read_as_their_one_text_versions(tmp_path):
    names, groups, run_path, run = _loaded(tmp_path)
    judgement = judge_run(run, str(tmp_path), {})
    handed = {}

    def write(path, text):
        handed[os.path.basename(path)] = text
        write_text_atomically(path, text)
    render_run(run_path, names, groups, write, judgement=judgement, loaded=run)
    for name in ("fleet.json", "junit.xml", "gpufleet.prom"):
        assert not isinstance(handed[name], str)  # chunks, never the whole export in memory
    expected = {"fleet.json": fleet_json_text(judgement, run), "junit.xml": junit_xml(judgement),
                "gpufleet.prom": prometheus_text(judgement, run, run_timestamp(run))}
    for name, text in expected.items():
        with open(os.path.join(run_path, name), encoding="utf-8") as handle:
            assert handle.read() == text
    assert json.loads(expected["fleet.json"])["hosts"].keys() == set(names)


def test_a_chunk_that_raises_leaves_the_earlier_file_and_no_temporary_one(tmp_path):
    path = str(tmp_path / "fleet.json")
    write_text_atomically(path, "earlier\n")

    def chunks():
        yield "{"
        raise RuntimeError("the judge's model broke half way")
    try:
        write_text_atomically(path, chunks())
    except RuntimeError:
        pass
    else:
        raise AssertionError("the chunk's exception was swallowed")
    with open(path, encoding="utf-8") as handle:
        assert handle.read() == "earlier\n"
    assert os.listdir(str(tmp_path)) == ["fleet.json"]
