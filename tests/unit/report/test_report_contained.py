"""One bad input never takes the report down: an unreadable earlier result is said on its drift checks, and a host
whose results break the judge or a renderer is that host's error while every other dossier and fleet output is written."""
from __future__ import annotations

import copy
import json
import os

import pytest

from ansible_collections.gpufleet.validation.plugins.plugin_utils.report import render as report_render
from ansible_collections.gpufleet.validation.plugins.plugin_utils.store.stored_run import load_run
from ansible_collections.gpufleet.validation.plugins.plugin_utils.probe_kit.declaration import ProbeSection
from ansible_collections.gpufleet.validation.plugins.plugin_utils.report.host_pages import PROBE_SECTIONS
from ansible_collections.gpufleet.validation.plugins.plugin_utils.report.render import render_run
from ansible_collections.gpufleet.validation.plugins.plugin_utils.run_judgement import judge_run
from report_writes import Written  # noqa: E402  pylint: disable=import-error

HERE = os.path.dirname(os.path.abspath(__file__))
HEALTH_OK = os.path.join(os.path.dirname(os.path.dirname(HERE)), "fixtures", "health_h200x2_ok_by_the_action.json")
PREVIOUS, CURRENT = "20261129T010000Z-1", "20261130T010000Z-2"
RIG = {"health.gpu_count": {"params": {"expected": 2}}}
FLEET_OUTPUTS = ("index.html", "index.md", "fleet.json", "junit.xml", "gpufleet.prom")


def _health(run_id, machine=0):
    """The recorded result as machine n's (its GPUs' own UUIDs and serials: one machine is one host to the judge)."""
    with open(HEALTH_OK, encoding="utf-8") as handle:
        envelope = json.load(handle)
    envelope["run_id"] = run_id
    for gpu in envelope["data"]["gpus"]:
        gpu["uuid"] = "GPU-%08d-%s" % (machine, gpu["uuid"][13:])
        gpu["serial"] = "%07d%06d" % (machine, gpu["index"])
    return envelope


def _write(results, run_id, host, text):
    directory = results / run_id / host
    directory.mkdir(parents=True, exist_ok=True)
    (directory / "health.json").write_text(text if isinstance(text, str) else json.dumps(text), encoding="utf-8")


@pytest.fixture
def results(tmp_path):
    """node-good's previous health.json is sound, node-truncated's is cut short, node-shaped's has {"gpus": "x"}."""
    results = tmp_path / "results"
    shaped = _health(PREVIOUS)
    shaped["data"]["gpus"] = "x"
    _write(results, PREVIOUS, "node-good", _health(PREVIOUS))
    _write(results, PREVIOUS, "node-truncated", json.dumps(_health(PREVIOUS))[:300])
    _write(results, PREVIOUS, "node-shaped", shaped)
    for machine, host in enumerate(("node-good", "node-truncated", "node-shaped")):
        _write(results, CURRENT, host, _health(CURRENT, machine))
    return results


def _judge_and_render(results, write=None):
    run = load_run(str(results / CURRENT))
    overrides = {host.name: RIG for host in run.hosts}
    judgement = judge_run(run, str(results), overrides)
    written = Written()
    render_run(run.run_dir, [], {}, write or written.__setitem__, judgement=judgement, loaded=run)
    return judgement, written


def _drift(verdict):
    return [check for check in verdict.checks if check.id.startswith("drift.")]


def test_an_unreadable_or_schema_breaking_previous_result_is_said_on_every_drift_check_that_needed_it(results):
    judgement, written = _judge_and_render(results)
    good = judgement.hosts["node-good"]
    expected = sorted((check.id, check.gpu_index) for check in _drift(good))
    assert len(expected) >= 10 and all(check.status != "skip" for check in _drift(good))
    for host, words in (("node-truncated", "is unreadable: "), ("node-shaped", "breaks its schema: ")):
        verdict = judgement.hosts[host]
        assert sorted((check.id, check.gpu_index) for check in _drift(verdict)) == expected, host
        reasons = {check.reason for check in _drift(verdict)}
        assert len(reasons) == 1, reasons
        (reason,) = reasons
        assert reason.startswith("not compared: previous run's health.json " + words), reason
        assert reason.endswith("(run %s)" % PREVIOUS)
        assert {check.status for check in _drift(verdict)} == {"skip"}
        assert verdict.verdict == good.verdict
    shaped_reason = next(iter({check.reason for check in _drift(judgement.hosts["node-shaped"])}))
    assert "at data.gpus: 'x' is not of type 'array'" in shaped_reason
    assert sorted(os.path.basename(path) for path in written if os.path.dirname(path) == str(results / CURRENT)) == sorted(FLEET_OUTPUTS)


def test_a_renderer_that_raises_for_one_host_makes_it_error_and_the_others_and_the_fleet_outputs_are_written(results, monkeypatch):
    broken = results / CURRENT / "node-shaped" / "health.json"
    envelope = json.loads(broken.read_text())
    envelope["data"]["platform"]["renderer_breaker"] = True
    broken.write_text(json.dumps(envelope))
    real = PROBE_SECTIONS["health"]

    def view(data):
        if data["platform"].get("renderer_breaker"):
            raise ZeroDivisionError("float division by zero")
        return real.view(data)
    monkeypatch.setitem(PROBE_SECTIONS, "health", ProbeSection(view=view, html_template=real.html_template, markdown_template=real.markdown_template))
    judgement, written = _judge_and_render(results)
    run_dir = str(results / CURRENT)
    for name in FLEET_OUTPUTS:
        assert os.path.join(run_dir, name) in written, name
    for host in ("node-good", "node-truncated", "node-shaped"):
        for name in ("dossier.html", "dossier.md"):
            assert os.path.join(run_dir, host, name) in written, (host, name)
    reason = ("rendering this host's report raised ZeroDivisionError: float division by zero; its results are kept in "
              "node-shaped/")
    assert judgement.hosts["node-shaped"].verdict == "error"
    assert judgement.hosts["node-shaped"].reasons == ["host.rendered: " + reason]
    fleet = json.loads(written[os.path.join(run_dir, "fleet.json")])
    assert fleet["hosts"]["node-shaped"]["verdict"] == "error"
    assert fleet["hosts"]["node-shaped"]["reasons"] == ["host.rendered: " + reason]
    assert fleet["hosts"]["node-good"]["verdict"] in ("pass", "warn")
    assert "Traceback" not in written[os.path.join(run_dir, "node-shaped", "dossier.md")]
    assert reason.replace("_", "\\_") in written[os.path.join(run_dir, "node-shaped", "dossier.md")]
    assert "float division by zero" in written[os.path.join(run_dir, "index.html")]
    assert 'host="node-shaped",verdict="error"} 1' in written[os.path.join(run_dir, "gpufleet.prom")]
    assert 'name="node-shaped"' in written[os.path.join(run_dir, "junit.xml")]


def test_a_dossier_that_cannot_be_written_makes_that_host_error_and_the_rest_is_written(results):
    written = Written()

    def write(path, text):
        if os.sep + "node-truncated" + os.sep in path:
            raise OSError(36, "File name too long", path)
        written[path] = text
    judgement, unused = _judge_and_render(results, write)
    run_dir = str(results / CURRENT)
    assert judgement.hosts["node-truncated"].verdict == "error"
    assert "raised OSError: [Errno 36] File name too long" in judgement.hosts["node-truncated"].reasons[0]
    assert judgement.hosts["node-good"].verdict in ("pass", "warn")
    assert sorted(os.path.basename(path) for path in written if os.path.dirname(path) == run_dir) == sorted(FLEET_OUTPUTS)
    assert os.path.join(run_dir, "node-good", "dossier.html") in written


def test_a_fleet_output_that_fails_does_not_keep_the_others_from_being_written(results, monkeypatch):
    def broken(*unused):
        raise RuntimeError("no junit today")
    monkeypatch.setattr(report_render, "junit_chunks", broken)
    written = Written()
    run = load_run(str(results / CURRENT))
    judgement = judge_run(run, str(results), {})
    with pytest.raises(ValueError, match="could not write junit.xml: RuntimeError: no junit today"):
        render_run(run.run_dir, [], {}, written.__setitem__, judgement=copy.copy(judgement), loaded=run)
    names = sorted(os.path.basename(path) for path in written if os.path.dirname(path) == run.run_dir)
    assert names == sorted(set(FLEET_OUTPUTS) - {"junit.xml"})
