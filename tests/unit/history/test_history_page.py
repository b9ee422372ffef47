"""The fleet history page (issue 48, point 3): <results>/history.html read from the run index of real reported runs:
every run listed with its hosts counted by verdict, drains and resumes, the hosts whose trend checks fired, each linked
to its dossier with a relative link to a file that exists; a hostile host name stays text; no script, nothing fetched."""
import json
import os
import re
import sys
from collections import Counter
from html.parser import HTMLParser
from urllib.parse import unquote

import pytest

from ansible_collections.gpufleet.validation.plugins.plugin_utils.history.fleet_nights import (
    PAGE_RUNS, FleetNights, HostMention, RunNight, fleet_nights)
from ansible_collections.gpufleet.validation.plugins.plugin_utils.history.index import update_index
from ansible_collections.gpufleet.validation.plugins.plugin_utils.report.history_page import (
    MENTIONS_SHOWN, render_history_page, write_history_page)
from ansible_collections.gpufleet.validation.plugins.plugin_utils.store.paths import (
    HISTORY_PAGE_FILE, SLURM_ACTIONS_FILE, check_run_id)

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "report"))
from test_report_in_browser import CHROMIUM, NO_CHROMIUM, _chromium, _page_requests  # noqa: E402  pylint: disable=import-error

RUNS = ("20261201T010000Z-a", "20261202T010000Z-b", "20261203T010000Z-c")
EVIL = 'evil<script>alert(1)</script>&"\'<img src=http://x.invalid/a.png>'
FAULTY = "gpu-r00-n005"  # ECC errors on its GPU 3 in every synthetic run (benchmarks/synthetic_fleet.py)


class _Page(HTMLParser):
    """The page's tags, links (href), sources (src) and text."""

    def __init__(self):
        super().__init__()
        self.tags, self.hrefs, self.srcs, self.text = [], [], [], []

    def handle_starttag(self, tag, attrs):
        self.tags.append(tag)
        for name, value in attrs:
            if name == "href":
                self.hrefs.append(value)
            elif name in ("src", "srcset", "data", "action", "poster"):
                self.srcs.append(value)

    def handle_data(self, data):
        self.text.append(data)


def _parse(path):
    page = _Page()
    page.feed(path.read_text(encoding="utf-8"))
    return page


def act(results_dir, run_id, drained, resumed):
    """What acting in Slurm leaves in a run: its record of drains (confirmed or not) and resumes."""
    (results_dir / run_id / SLURM_ACTIONS_FILE).write_text(json.dumps({
        "schema_version": "1", "run_id": run_id, "acts": [],
        "drained": [{"node": host, "host": host, "reason": "gpufleet %s: ECC" % run_id, "at": "2026-12-03T01:30:00Z",
                     "run_started": "2026-12-03T01:00:00Z", "confirmed": confirmed, "intake": False} for host, confirmed in drained],
        "resumed": [{"node": host, "host": host, "reason": "", "at": "2026-12-03T01:40:00Z", "confirmed": True} for host in resumed]}))


@pytest.fixture(name="history", scope="module")
def history_fixture(tmp_path_factory, report_run):
    """Three runs reported with the trend checks: the faulty host drained and resumed after the first two, so that its
    fault's second return in the third escalates it (history.returning_fault); a host with a hostile name, resumed."""
    results = tmp_path_factory.mktemp("history") / "results"
    report_run(str(results), RUNS[0], hosts=6, seed=1, trends=True)
    act(results, RUNS[0], drained=[(FAULTY, True)], resumed=[FAULTY])
    report_run(str(results), RUNS[1], hosts=6, seed=2, renamed={"gpu-r00-n002": EVIL}, trends=True)
    act(results, RUNS[1], drained=[(FAULTY, False)], resumed=[FAULTY, EVIL])
    report_run(str(results), RUNS[2], hosts=6, seed=3, trends=True)
    assert update_index(str(results)).problems == []
    assert write_history_page(str(results)) == []
    return results


def _rows(page_text):
    """{run id: its table row's HTML} of the history table."""
    rows = {}
    for row in page_text.split("<tr>")[2:]:
        found = re.search(r'<a href="([^"]+)/index.html">', row)
        rows[unquote(found.group(1))] = row
    return rows


def test_every_run_is_listed_newest_first_with_its_hosts_by_verdict(history):
    text = (history / HISTORY_PAGE_FILE).read_text(encoding="utf-8")
    rows = _rows(text)
    assert list(rows) == list(reversed(RUNS))
    for run_id in RUNS:
        fleet = json.loads((history / run_id / "fleet.json").read_text())
        counts = Counter(host["verdict"] for host in fleet["hosts"].values())
        shown = dict(re.findall(r'<span class="state v-\w+">([^<]+)</span> (\d+)', rows[run_id]))
        assert {verdict.replace("_", " "): str(count) for verdict, count in counts.items()} == shown
        assert "%d hosts" % len(fleet["hosts"]) in rows[run_id]
        assert rows[run_id].count("<rect ") == len(counts)
    nights = fleet_nights(str(history))
    assert [night.run_id for night in nights.nights] == list(reversed(RUNS)) and nights.indexed == 3 and nights.limit == PAGE_RUNS


def test_drains_resumes_and_fired_trend_checks_are_named_with_their_dossiers(history):
    nights = {night.run_id: night for night in fleet_nights(str(history)).nights}

    def dossier(run_id, host):
        return "%s/%s/dossier.html" % (run_id, json.loads((history / run_id / "fleet.json").read_text())[
            "hosts"][host]["dossier"]["html"].split("/")[0])
    assert [(m.host, m.dossier, m.notes) for m in nights[RUNS[0]].drained] == [(FAULTY, dossier(RUNS[0], FAULTY), ())]
    assert [(m.host, m.notes) for m in nights[RUNS[1]].drained] == [(FAULTY, ("not confirmed",))]
    assert [(m.host, m.dossier) for m in nights[RUNS[1]].resumed] == [(FAULTY, dossier(RUNS[1], FAULTY)), (EVIL, dossier(RUNS[1], EVIL))]
    assert [(m.host, m.dossier, m.notes) for m in nights[RUNS[2]].trends] == [
        (FAULTY, dossier(RUNS[2], FAULTY), ("history.returning_fault",))]
    assert nights[RUNS[0]].trends == nights[RUNS[1]].trends == [] and nights[RUNS[2]].drained == nights[RUNS[2]].resumed == []
    rows = _rows((history / HISTORY_PAGE_FILE).read_text(encoding="utf-8"))
    assert "history.returning_fault" in rows[RUNS[2]] and "not confirmed" in rows[RUNS[1]]


def test_links_are_relative_and_lead_to_files_that_exist(history):
    page = _parse(history / HISTORY_PAGE_FILE)
    # each run's index, the hosts that did not pass (at most 10 a run, then the run's index again), two drains, three
    # resumes, one host whose trend check fired
    not_passing = [sum(1 for entry in json.loads((history / run_id / "fleet.json").read_text())["hosts"].values()
                       if entry["verdict"] != "pass") for run_id in RUNS]
    assert all(not_passing)
    assert len(page.hrefs) == 3 + sum(min(count, 10) + (count > 10) for count in not_passing) + 2 + 3 + 1
    for target in page.hrefs:
        assert not re.match(r"^[a-z][a-z0-9+.-]*:|^/", target, re.I), target
        assert os.path.isfile(history / unquote(target)), target


def test_a_hostile_name_stays_text_and_nothing_is_run_or_fetched(history):
    raw = (history / HISTORY_PAGE_FILE).read_text(encoding="utf-8")
    page = _parse(history / HISTORY_PAGE_FILE)
    assert EVIL in "".join(page.text)
    assert "<script" not in raw.lower() and "script" not in page.tags and "img" not in page.tags
    assert page.srcs == [] and not [target for target in page.hrefs if re.match(r"^[a-z][a-z0-9+.-]*:|^//", target, re.I)]
    assert "default-src 'none'" in raw   # the report's Content-Security-Policy (_layout.html.j2)


def test_the_page_shows_at_most_its_limit_newest_first(history):
    nights = fleet_nights(str(history), runs=2)
    assert [night.run_id for night in nights.nights] == [RUNS[2], RUNS[1]] and nights.indexed == 3


def test_no_index_is_a_warning_and_a_link_in_the_pages_place_is_replaced_not_written_through(tmp_path, history):
    (tmp_path / "results").mkdir()
    warnings = write_history_page(str(tmp_path / "results"))
    assert len(warnings) == 1 and "no run index" in warnings[0] and not (tmp_path / "results" / HISTORY_PAGE_FILE).exists()
    outside = tmp_path / "outside.html"
    outside.write_text("kept")
    link = history / HISTORY_PAGE_FILE
    saved = link.read_bytes()
    link.unlink()
    link.symlink_to(outside)
    try:
        assert write_history_page(str(history)) == []
        assert outside.read_text() == "kept" and not link.is_symlink() and link.read_bytes() == saved   # the link replaced
    finally:
        link.unlink()
        link.write_bytes(saved)


def test_the_page_name_is_no_run_id():
    with pytest.raises(ValueError, match="fleet history page"):
        check_run_id(HISTORY_PAGE_FILE)


@pytest.mark.skipif(CHROMIUM is None, reason=NO_CHROMIUM)
def test_headless_chromium_renders_the_page_and_fetches_nothing(history, tmp_path):
    page = history / HISTORY_PAGE_FILE
    dom = _chromium(tmp_path, "history", page)
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in dom and "<script" not in dom.lower()
    assert dom.count('class="verdict-bar"') == len(RUNS) and "history.returning_fault" in dom
    requests = _page_requests(tmp_path, "history", page)
    assert not [url for url, unused_initiator in requests if not url.startswith(("file:", "data:"))], requests


def test_a_night_of_many_drains_shows_the_first_and_folds_the_rest():
    drained = [HostMention("node-%02d" % number, "r1/node-%02d/dossier.html" % number) for number in range(MENTIONS_SHOWN + 2)]
    page = render_history_page(FleetNights([RunNight("r1", "2026-12-01T01:00:00Z", 12, {"fail": 12}, drained=drained)], 1, PAGE_RUNS))
    folded = page[page.index("<details><summary>2 more</summary>"):]
    assert re.findall(r">(node-\d\d)</a>", page) == ["node-%02d" % number for number in range(MENTIONS_SHOWN + 2)]
    assert re.findall(r">(node-\d\d)</a>", folded)[:2] == ["node-%02d" % MENTIONS_SHOWN, "node-%02d" % (MENTIONS_SHOWN + 1)]
