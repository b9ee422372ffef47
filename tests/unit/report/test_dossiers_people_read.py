"""Issue 31 (5): a dossier a person reads, an index that fits a window.

Defects this holds, measured before the change: the dossier of one H200 after acceptance was 1.5 MB of HTML (an 8-GPU
host 11.9 MB), most of it "Every measurement"; the NVML reason "not supported by this GPU" was written out in every
row that had it; the verdict was shown twice at the top; the index's hosts table was 23 columns wide for one host and a
long reason scrolled inside its cell.
"""
import html
import os
import re
import shutil
import sys

import pytest
from markupsafe import escape

from ansible_collections.gpufleet.validation.plugins.plugin_utils.report.index_columns import (
    INDEX_METRIC_COLUMNS, fold_reasons, shown_metric_positions)
from ansible_collections.gpufleet.validation.plugins.plugin_utils.report.markup import markdown_escape
from ansible_collections.gpufleet.validation.plugins.plugin_utils.report.render import render_run
from ansible_collections.gpufleet.validation.plugins.plugin_utils.report.values import flatten
from ansible_collections.gpufleet.validation.plugins.plugin_utils.report.verdicts import metric_columns
from ansible_collections.gpufleet.validation.plugins.plugin_utils.result_fields import unavailable_fields
from ansible_collections.gpufleet.validation.plugins.plugin_utils.run_judgement import judge_run
from ansible_collections.gpufleet.validation.plugins.plugin_utils.store.stored_run import load_run
from report_writes import Written  # noqa: E402  pylint: disable=import-error

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
sys.path.insert(0, os.path.join(ROOT, "benchmarks"))
from synthetic_acceptance_host import write_acceptance_host  # noqa: E402  pylint: disable=import-error,wrong-import-position

# The 1 x H200 rig's acceptance run (every probe; one GPU of an 8-GPU SKU, so six checks did not pass).
RECORDED = os.path.join(ROOT, "docs", "examples", "h200x1", "peer-tools")
RECORDED_RUN = "20261203T040540Z-591300"
NVML_NOT_SUPPORTED = "not supported by this GPU (NVML: Not Supported)"
KIB = 1024


def _render(results_dir, run_id, host):
    run_path = os.path.join(results_dir, run_id)
    run = load_run(run_path, [host], {})
    judgement = judge_run(run, results_dir, {})
    written = Written()
    render_run(run_path, [host], {}, written.__setitem__, judgement=judgement, loaded=run, workers=1)
    root = os.path.realpath(run_path)
    return run, judgement, {os.path.relpath(path, root): text for path, text in written.items()}


@pytest.fixture(scope="module")
def recorded(tmp_path_factory):
    """The recorded acceptance run, judged and rendered as the report action does: (run, judgement, {path: text})."""
    target = tmp_path_factory.mktemp("recorded")
    shutil.copytree(os.path.join(RECORDED, RECORDED_RUN), str(target / RECORDED_RUN))
    for name in os.listdir(str(target / RECORDED_RUN / "localhost")):
        if name.endswith((".html", ".md")):
            os.remove(str(target / RECORDED_RUN / "localhost" / name))
    return _render(str(target), RECORDED_RUN, "localhost")


@pytest.fixture(scope="module")
def eight_gpus(tmp_path_factory):
    """A synthetic host of 8 H200s after the acceptance profile (benchmarks/synthetic_acceptance_host.py)."""
    target = str(tmp_path_factory.mktemp("eight"))
    write_acceptance_host(target, "20261130T000000Z-000001", "gpu-r00-n000", gpus=8)
    return _render(target, "20261130T000000Z-000001", "gpu-r00-n000")


def _probe_sections(text, markdown):
    """The page from its first probe's section on (each probe's tables, then the notes): where a field's reason shows.
    Above it are the judge's checks, whose reasons are sentences of their own that may quote a field's reason, and the
    Python candidates' outcomes ("not chosen")."""
    return text[re.search(r"\n## Probe (?!results)" if markdown else '<h2 id="probe-', text).start():]


def test_an_8_gpu_hosts_dossier_is_at_most_300_kb_of_html_per_gpu(eight_gpus):
    run, unused_judgement, written = eight_gpus
    host = run.hosts[0]
    assert len(host.probes) >= 10 and len(host.probes["gemm"].data["devices"]) == 8
    size = len(written["gpu-r00-n000/dossier.html"].encode("utf-8"))
    assert size <= 300 * KIB * 8, "the dossier of 8 GPUs is %d KiB: %d KiB a GPU" % (size // KIB, size // KIB // 8)
    # The values left it for the page beside it, which the dossier links.
    assert 'href="measurements.html#probe-gemm"' in written["gpu-r00-n000/dossier.html"]
    assert len(written["gpu-r00-n000/measurements.html"]) > size


def test_every_value_is_one_click_away_on_the_measurements_page(recorded):
    run, unused_judgement, written = recorded
    dossier, page = written["localhost/dossier.html"], written["localhost/measurements.html"]
    markdown = written["localhost/measurements.md"]
    checked = 0
    for name, entry in run.hosts[0].probes.items():
        assert 'href="measurements.html#probe-%s"' % name in dossier
        assert '<h2 id="probe-%s">' % name in page
        part = page.split('<h2 id="probe-%s">' % name, 1)[1].split("<h2 ", 1)[0]
        md_part = markdown.split("## Probe %s: " % name, 1)[1].split("\n## ", 1)[0]
        for row in flatten(entry.data):
            if row.unavailable is None:
                assert "<td><code>%s</code></td><td>%s</td><td>%s</td>" % (
                    escape(row.path), escape(row.value), escape(row.unit)) in part, row
                assert "| %s | %s | %s |" % (markdown_escape(row.path), markdown_escape(row.value),
                                             markdown_escape(row.unit)) in md_part, row
            else:
                assert "<td><code>%s</code></td><td colspan=\"2\">unavailable <a class=\"ref\" href=\"#note-" % (
                    escape(row.path)) in part, row
                assert str(escape(row.unavailable)) in page and markdown_escape(row.unavailable) in markdown
            checked += 1
    assert checked > 7000


@pytest.mark.parametrize("markdown", [False, True], ids=["html", "md"])
def test_each_distinct_unavailable_reason_is_stated_once_in_the_dossier(eight_gpus, recorded, markdown):
    for run, unused_judgement, written in (eight_gpus, recorded):
        host = run.hosts[0]
        text = written["%s/dossier.%s" % (host.dir_name, "md" if markdown else "html")]
        body = _probe_sections(text, markdown)
        reasons = {reason for entry in host.probes.values() for unused_path, reason in
                   unavailable_fields(entry.data) + unavailable_fields(entry.envelope.get("environment", {}))}
        probe_reasons = {entry.reason for entry in host.probes.values() if entry.reason}
        assert NVML_NOT_SUPPORTED in reasons
        shown_of = {reason: markdown_escape(reason) if markdown else str(escape(reason)) for reason in reasons}
        for reason in sorted(reasons - probe_reasons):
            shown = shown_of[reason]
            # "not measured: <reason>" is a reason of its own: the shorter one is counted outside it
            inside_others = sum(body.count(other) for other in shown_of.values() if other != shown and shown in other)
            assert body.count(shown) - inside_others == 1, (reason, body.count(shown), inside_others)
            number = re.search(r"\[(\d+)\\?\] %s" % re.escape(shown), body).group(1)
            assert (("\\[%s\\]" % number) if markdown else 'href="#note-%s"' % number) in body.split(shown, 1)[0]


def test_the_verdict_is_shown_once_at_the_top(recorded):
    unused_run, unused_judgement, written = recorded
    page = written["localhost/dossier.html"]
    top = page.split("<body>", 1)[1].split('<h2 id="todo">', 1)[0]
    assert top.count('class="state v-') == 1 and '<h1>Host localhost: <span class="state v-bad">fail</span></h1>' in top
    markdown = written["localhost/dossier.md"]
    headings = [line for line in markdown.split("## What to do", 1)[0].splitlines() if line.startswith("#")]
    assert headings == ["# Host localhost: fail", "## What a pass proves here"]


def test_the_hosts_table_shows_at_most_5_metric_columns_and_folds_the_rest(recorded):
    unused_run, judgement, written = recorded
    metrics = metric_columns(judgement)
    assert len(metrics) > INDEX_METRIC_COLUMNS
    index = written["index.html"]
    table = index.split('<table class="hosts">', 1)[1].split("</table>", 1)[0]
    header = table.split("</tr>", 1)[0]
    assert header.count("<th") == 3 + INDEX_METRIC_COLUMNS + 2, header
    row = table.split("</tr>", 2)[1]
    assert row.count("<td") == 3 + INDEX_METRIC_COLUMNS + 2
    folded = row.split("<details>", 1)[1].split("</details>", 1)[0]
    for column in metrics:  # every metric: a column, or in the row's folded cell
        assert 'title="%s"' % column["metric"] in header or html.escape(column["title"]) + ":" in folded, column
    markdown_header = [line for line in written["index.md"].split("## Hosts, worst first", 1)[1].splitlines()
                       if line.startswith("| host |")][0]
    assert markdown_header.count(" | ") == 3 + INDEX_METRIC_COLUMNS + 2 - 1


def test_the_hosts_table_folds_long_reasons(recorded):
    unused_run, judgement, written = recorded
    reasons = judgement.hosts["localhost"].reasons
    assert len(reasons) >= 3 and len(reasons[0]) > 160  # root causes only: the checks that follow are folded
    table = written["index.html"].split('<table class="hosts">', 1)[1].split("</table>", 1)[0]
    cell = table.split("</tr>", 2)[1].rsplit("<td>", 1)[1]
    assert cell.startswith('<details class="reasons"><summary>') and "clamp" not in table
    summary = cell.split("</summary>", 1)[0]
    assert "<strong>+%d more</strong>" % (len(reasons) - 1) in summary and len(html.unescape(re.sub("<[^>]+>", "", summary))) < 200
    folded = fold_reasons(reasons)
    assert folded["tail"] and str(escape(folded["head"])) + "…" in summary
    assert "</summary>…" + str(escape(folded["tail"])) in cell
    for reason in reasons[1:]:
        assert "<li>%s</li>" % escape(reason) in cell


def test_fold_reasons_cuts_a_long_first_reason_at_a_space():
    long = "word " * 60
    folded = fold_reasons([long.strip(), "second"])
    assert folded["head"] + folded["tail"] == long.strip() and len(folded["head"]) <= 160 and folded["head"].endswith("word")
    assert folded["more"] == ["second"]
    assert fold_reasons(["short"]) == {"head": "short", "tail": "", "more": []}
    assert fold_reasons([]) == {"head": "", "tail": "", "more": []}


def test_the_shown_metric_columns_put_flagged_metrics_first_then_one_of_each_probe():
    metrics = [{"metric": name} for name in ("gemm.a", "gemm.b", "gemm.c", "health.a", "hostbw.a", "load.a", "membw.a")]
    unflagged = [[""] * len(metrics)]
    assert shown_metric_positions(metrics, unflagged) == [0, 3, 4, 5, 6]
    flagged = [["", "", "warn", "", "", "", ""], ["", "", "bad", "", "", "", ""]]
    assert shown_metric_positions(metrics, flagged) == [0, 2, 3, 4, 5]
    assert shown_metric_positions(metrics[:4], unflagged) == [0, 1, 2, 3]
