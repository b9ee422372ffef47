"""The dossier's history plots (issue 48, point 3): per headline metric, this host's last runs from the run index and
this run from its judgement, a line per GPU, the fleet median of each run, the known-good floor, and a strip of the
host's verdicts. The runs are the H200 rig's recorded acceptance results replayed as three hosts (one decaying)."""
import json
import os
import re
import shutil
import sys

import pytest

from ansible_collections.gpufleet.validation.plugins.plugin_utils.history.index import index_path
from ansible_collections.gpufleet.validation.plugins.plugin_utils.history.report_update import index_warnings, trend_history
from ansible_collections.gpufleet.validation.plugins.plugin_utils.report.render import render_run
from ansible_collections.gpufleet.validation.plugins.plugin_utils.report.number_format import format_quantity
from ansible_collections.gpufleet.validation.plugins.plugin_utils.report.values import format_number
from ansible_collections.gpufleet.validation.plugins.plugin_utils.run_judgement import judge_run
from ansible_collections.gpufleet.validation.plugins.plugin_utils.store.atomic import text_writer_below
from ansible_collections.gpufleet.validation.plugins.plugin_utils.store.stored_run import load_run

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "calibrate"))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "report"))
from calibration_runs import store_run  # noqa: E402  pylint: disable=import-error,wrong-import-position
from test_report_in_browser import CHROMIUM, NO_CHROMIUM, _chromium, _page_requests  # noqa: E402  pylint: disable=import-error

HOSTS = ["node-a", "node-b", "node-c"]
RUNS = ["202612%02dT010000Z-r%d" % (day, day) for day in (1, 2, 3, 4)]
OVERRIDES = {host: {"health.gpu_count": {"params": {"expected": 1}}} for host in HOSTS}
MEMBW = "membw.bandwidth_gbps"


def report(results, run_id, factor):
    """One run stored, judged with the trend checks and rendered as the report does, then the index updated."""
    store_run(results, HOSTS, run_id=run_id, scale={"node-a": {"membw": factor}})
    run = load_run(str(results / run_id), HOSTS, {})
    judgement = judge_run(run, str(results), OVERRIDES, trend_history=trend_history(str(results), run_id, OVERRIDES), workers=1)
    render_run(str(results / run_id), HOSTS, {}, text_writer_below(str(results)), judgement=judgement, loaded=run, workers=1)
    assert index_warnings(str(results), run_id) == []


@pytest.fixture(name="history", scope="module")
def history_fixture(tmp_path_factory):
    results = tmp_path_factory.mktemp("plots") / "results"
    for number, run_id in enumerate(RUNS):
        report(results, run_id, 1 - 0.02 * number)
    return results


def _dossier(results, run_id, host="node-a"):
    return (results / run_id / host / "dossier.html").read_text(encoding="utf-8")


def _plot(page, title):
    """The SVG of the plot titled title in the dossier's history section."""
    section = page[page.index('<h2 id="history">'):page.index("<h2>Probe results")]
    found = re.search(r'<svg [^>]*class="history-plot"[^>]*><title>%s</title>.*?</svg>' % re.escape(title), section, re.S)
    assert found, title
    return found.group(0)


def test_the_plot_shows_each_run_its_median_its_floor_and_its_verdict(history):
    page = _dossier(history, RUNS[-1])
    assert "History: this host's last 4 runs" in page
    plot = _plot(page, "Memory bandwidth")
    for run_id in RUNS:
        fleet = json.loads((history / run_id / "fleet.json").read_text())
        host = fleet["hosts"]["node-a"]
        value = [metric["value"] for metric in host["metrics"] if metric["id"] == MEMBW]
        assert len(value) == 1
        assert "GPU 0, run %s: %s GB/s" % (run_id, format_number(value[0])) in plot
        median = fleet["fleet_statistics"][host["sku"]][MEMBW]["median"]
        assert "fleet median, run %s: %s GB/s" % (run_id, format_number(median)) in plot
        assert re.search(r"<title>run %s \([^)]*\): %s</title>" % (re.escape(run_id), host["verdict"].replace("_", " ")), plot)
    check = [found for found in host["checks"] if found["id"] == "membw.bandwidth"][0]
    # the floor the judge found (judge/trend_step.fail_floors: the check's reference, its rule's fail_below_pct)
    assert "fail floor %s GB/s (85 %% of the known-good %s GB/s, rule membw.bandwidth)" % (
        format_quantity(check["reference"] * 0.85, "GB/s").split()[0], format_quantity(check["reference"], "GB/s").split()[0]) in plot
    assert plot.count("<circle ") == 4 + 4 and plot.count("<rect ") == 4


def test_the_first_run_has_no_index_yet_and_every_headline_is_plotted(history):
    assert 'id="history"' not in _dossier(history, RUNS[0])   # rendered before any index existed
    assert "History: this host's last 2 runs" in _dossier(history, RUNS[1])
    assert _plot(_dossier(history, RUNS[1]), "Memory bandwidth").count("<rect ") == 2
    titles = re.findall(r'class="history-plot"[^>]*><title>([^<]+)</title>', _dossier(history, RUNS[-1]))
    assert sorted(titles) == ["BF16 matmul (burst)", "BF16 matmul (sustained)", "FP8 matmul (burst)", "FP8 matmul (sustained)",
                              "GPU-to-host bandwidth", "Host-to-GPU bandwidth", "Memory bandwidth"]


def test_no_script_and_nothing_fetched_in_the_section(history):
    page = _dossier(history, RUNS[-1])
    section = page[page.index('<h2 id="history">'):page.index("<h2>Probe results")]
    assert "<script" not in section.lower() and not re.search(r'(src|href)="(?![.][.]/[.][.]/history[.]html)', section)


def test_without_an_index_the_dossier_has_no_history_and_an_unreadable_one_says_so(history, tmp_path):
    bare = tmp_path / "bare"
    shutil.copytree(history / RUNS[0], bare / RUNS[0])
    run = load_run(str(bare / RUNS[0]), HOSTS, {})
    judgement = judge_run(run, str(bare), OVERRIDES, workers=1)
    render_run(str(bare / RUNS[0]), HOSTS, {}, text_writer_below(str(bare)), judgement=judgement, loaded=run, workers=1)
    assert 'id="history"' not in _dossier(bare, RUNS[0])
    with open(index_path(str(bare)), "w", encoding="utf-8") as handle:
        handle.write("not a database\n" * 100)
    render_run(str(bare / RUNS[0]), HOSTS, {}, text_writer_below(str(bare)), judgement=judgement, loaded=run, workers=1)
    page = _dossier(bare, RUNS[0])
    assert "No history shown: the run index could not be read (DatabaseError: file is not a database)." in page
    assert json.loads((bare / RUNS[0] / "fleet.json").read_text())["hosts"]["node-a"]["verdict"] != "error"


@pytest.mark.skipif(CHROMIUM is None, reason=NO_CHROMIUM)
def test_headless_chromium_renders_the_plots_and_fetches_nothing(history, tmp_path):
    page = history / RUNS[-1] / "node-a" / "dossier.html"
    dom = _chromium(tmp_path, "dossier", page)
    assert dom.count('class="history-plot"') == 7 and "<script" not in dom.lower()
    requests = _page_requests(tmp_path, "dossier", page)
    assert not [url for url, unused_initiator in requests if not url.startswith(("file:", "data:"))], requests


def test_two_gpus_at_one_index_are_told_apart_by_their_uuid():
    """A GPU swapped, or the rig's many machines under "localhost": GPU 0 of each run is not one GPU."""
    from ansible_collections.gpufleet.validation.plugins.plugin_utils.report.history_plots import _series_label
    old, new, other = ("membw.bandwidth_gbps", "GPU-56db6506-b863"), ("membw.bandwidth_gbps", "GPU-3cb5a54b-d15d"), ("membw.bandwidth_gbps", "GPU-1")
    indexes = {old: 0, new: 0, other: 1}
    assert [_series_label(key, indexes, [old, new, other]) for key in (old, new, other)] == [
        "GPU 0 (GPU-56db6506)", "GPU 0 (GPU-3cb5a54b)", "GPU 1"]
